import type { HttpResponseInit, InvocationContext } from '@azure/functions';
import { RuleError, type Refusal } from '../domain/errors.js';
import { ApiError, ConfigurationError, DependencyUnavailableError, STATUS_NAMES } from '../errors.js';
import { translate, type MessageKey } from '../messages/catalog.js';
import type { Language } from './language.js';
import { responseHeaders } from './responses.js';

const RETRY_AFTER_SECONDS = 5;
const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT',
  'REQUEST_SEND_ERROR',
]);
// Cosmos answers these when it is overloaded or briefly unavailable; the SDK has already retried.
const COSMOS_BUSY_STATUSES = new Set([408, 429, 449, 503]);
// How deep a chain of causes is followed: a cause that leads back to its error must not loop forever.
const MAX_CAUSE_DEPTH = 8;

const UNAVAILABLE_MESSAGES: Record<DependencyUnavailableError['dependency'], MessageKey> = {
  identityProvider: 'identityProviderUnavailable',
  database: 'databaseUnavailable',
  queue: 'queueUnavailable',
};

const REFUSAL_STATUSES: Readonly<Record<Refusal, number>> = { invalid: 400, notFound: 404, conflict: 409, contended: 409, stale: 412, keyReused: 422 };
/** Contention that outlasted the retries is no outage: the caller may come back at once. */
const CONTENDED_RETRY_AFTER_SECONDS = 1;

/** The refusals whose reason an operator asks for: who may not call (401) or may not do this (403). */
const REFUSALS = new Set([401, 403]);

let configurationReported = false;

function isDatabaseOutage(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, name, cause } = error as { code?: unknown; name?: unknown; cause?: unknown };
  if (typeof code === 'number') return COSMOS_BUSY_STATUSES.has(code);
  if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return true;
  if (name === 'TimeoutError' || name === 'AbortError') return true;
  return cause !== undefined && depth < MAX_CAUSE_DEPTH && isDatabaseOutage(cause, depth + 1);
}

function body(status: number, messageKey: MessageKey, language: Language, requestId: string, params: Record<string, string | number> = {}) {
  return { error: STATUS_NAMES[status] ?? 'Error', message: translate(messageKey, language, params), status, requestId };
}

/** The one place where any thrown value becomes the contract's error body. Nothing internal leaks. */
export function errorResponse(error: unknown, language: Language, context: InvocationContext): HttpResponseInit {
  if (error instanceof RuleError) error = asApiError(error);
  const requestId = context.invocationId;
  const headers = responseHeaders(requestId, { language, body: true });

  if (error instanceof ApiError) {
    // A 5xx the API chose to send (a dependency failed) still deserves a line in the log.
    if (error.status >= 500) log(context, 'warn', `${error.messageKey} (request ${requestId})`, error.cause);
    // Why a caller was refused, as its answer says it: an operator reading the log sees more than the status.
    // The message names a reason or a permission, never what the token held.
    if (REFUSALS.has(error.status)) {
      context.info(`Refused with ${error.status} ${error.messageKey} (request ${requestId}): ${translate(error.messageKey, 'en', error.params)}`);
    }
    const jsonBody = { ...body(error.status, error.messageKey, language, requestId, error.params), ...error.options.extra };
    if (error.options.details) Object.assign(jsonBody, { details: error.options.details });
    return { status: error.status, jsonBody, headers: { ...headers, ...error.options.headers } };
  }
  if (error instanceof ConfigurationError) {
    if (!configurationReported) {
      configurationReported = true;
      context.error(`Refusing requests until the app is configured: ${error.problems.join('; ')}`);
    }
    return { status: 500, jsonBody: body(500, 'notConfigured', language, requestId), headers };
  }
  if (error instanceof DependencyUnavailableError || isDatabaseOutage(error)) {
    const dependency = error instanceof DependencyUnavailableError ? error.dependency : 'database';
    const cause = error instanceof DependencyUnavailableError ? error.cause : error;
    log(context, 'warn', `${dependency} unavailable (request ${requestId})`, cause);
    const key = UNAVAILABLE_MESSAGES[dependency];
    return { status: 503, jsonBody: body(503, key, language, requestId), headers: { ...headers, 'Retry-After': String(RETRY_AFTER_SECONDS) } };
  }
  log(context, 'error', `Unexpected failure (request ${requestId})`, error);
  return { status: 500, jsonBody: body(500, 'internalError', language, requestId, { requestId }), headers };
}

function asApiError({ refusal, messageKey, params, extra }: RuleError): ApiError {
  const headers = refusal === 'contended' ? { 'Retry-After': String(CONTENDED_RETRY_AFTER_SECONDS) } : undefined;
  return new ApiError(REFUSAL_STATUSES[refusal], messageKey, params, { extra, headers });
}

/**
 * A failure as the log shows it: what went wrong and for which request, the error's name, code and
 * message (the code never puts tokens or keys into one; the length is capped) and its causes. Stack
 * frames name the server's files and are no use to an operator: they go to the debug level only.
 */
function log(context: InvocationContext, level: 'warn' | 'error', what: string, error: unknown): void {
  context[level](`${what}: ${describe(error)}`);
  if (error instanceof Error && error.stack) context.debug(`${what}: ${error.stack}`);
}

function describe(error: unknown, depth = 0): string {
  if (!(error instanceof Error)) return typeof error;
  const { code } = error as { code?: unknown };
  const cause = error.cause instanceof Error && depth < MAX_CAUSE_DEPTH ? `; caused by ${describe(error.cause, depth + 1)}` : '';
  const shownCode = typeof code === 'string' || typeof code === 'number' ? ` (${code})` : '';
  return `${error.name}${shownCode}: ${error.message.slice(0, 300)}${cause}`;
}
