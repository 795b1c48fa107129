/**
 * A typed client for the LMS Platform API: openapi-fetch over the types that openapi-typescript
 * generates from the API's OpenAPI document into schema.ts. Every path, parameter, body and answer is
 * typed from the document; this file adds the token (sent to the base URL's origin alone), default
 * headers, timeouts, safe retries, paging through `Link`, typed errors, a RAG job waiter, and webhook
 * verification.
 */
import createClient, { type Client, type ClientPathsWithMethod, type MaybeOptionalInit, type Middleware } from 'openapi-fetch';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components, paths } from './schema.js';

export { WebhookVerificationError };

export type { components, paths };
export type Project = components['schemas']['Project'];
export type Task = components['schemas']['Task'];
export type User = components['schemas']['User'];
export type RagJob = components['schemas']['RagJob'];
/** The body of every error answer. */
export type ApiError = components['schemas']['Error'];

/**
 * An answer the client does not take as a success: an error answer of the API (thrown by `unwrap`,
 * `pages`, `items`, `all` and `waitForRagJob`), a redirect, or a `Link` it must not follow. The
 * subclasses below are the ones worth a branch of their own.
 */
export class LmsApiError extends Error {
  override readonly name: string = 'LmsApiError';
  readonly status: number;
  /** The status's short name: `Not Found`, `Precondition Failed`, … */
  readonly error: string;
  /** For validation errors: each field or parameter refused, and why (also in `message`). */
  readonly details: ApiError['details'];
  /** Identifies the request in the service log: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** The whole body, with the fields some errors add (`claims`, `activeJobId`); `body.message` is the API's message alone. */
  readonly body: ApiError;
  /** The answer, for its headers (`Retry-After`, `WWW-Authenticate`, `Location`). */
  readonly response: Response;

  constructor(body: ApiError, response: Response) {
    super(body.details?.length ? `${body.message} [${body.details.map(({ path, message }) => `${path || 'body'}: ${message}`).join('; ')}]` : body.message);
    this.status = body.status;
    this.error = body.error;
    this.details = body.details;
    this.requestId = body.requestId;
    this.body = body;
    this.response = response;
  }

  /**
   * The error of an answer, as the subclass for its status; one that did not come from the API (a
   * proxy's HTML page, a redirect) is described from its status and headers.
   */
  static from(error: unknown, response: Response): LmsApiError {
    const body = isApiError(error) ? error : { error: response.statusText || 'Error', message: describe(error, response), status: response.status };
    const Subclass = ERRORS_BY_STATUS[body.status] ?? LmsApiError;
    return new Subclass(body, response);
  }
}

/** 400: the request is not valid; `details` (and `message`) say which field or parameter, and why. */
export class BadRequestError extends LmsApiError {
  override readonly name: string = 'BadRequestError';
}
/** 401: no token, or one the API does not accept (`WWW-Authenticate` says why; `body.claims` after a claims challenge). */
export class UnauthorizedError extends LmsApiError {
  override readonly name: string = 'UnauthorizedError';
}
/** 403: the caller's roles do not allow it. */
export class ForbiddenError extends LmsApiError {
  override readonly name: string = 'ForbiddenError';
}
/** 404: no such resource in the caller's tenant. */
export class NotFoundError extends LmsApiError {
  override readonly name: string = 'NotFoundError';
}
/** 409: it conflicts with the resource's state (`body.activeJobId` for a RAG rebuild while another runs). */
export class ConflictError extends LmsApiError {
  override readonly name: string = 'ConflictError';
}
/** 412: `If-Match` named a version that is no longer the current one: read it again, and decide. */
export class PreconditionFailedError extends LmsApiError {
  override readonly name: string = 'PreconditionFailedError';
}
/** 429, once the retries are spent or its `Retry-After` is longer than `maxRetryDelayMs`: come back after `Retry-After`. */
export class ThrottledError extends LmsApiError {
  override readonly name: string = 'ThrottledError';
}

/**
 * A list answer whose `Link: <…>; rel="next"` names another origin than the base URL's, or a page
 * already read: the client sends its token nowhere else, and does not page in a circle.
 */
export class UnsafeLinkError extends LmsApiError {
  override readonly name: string = 'UnsafeLinkError';
  /** Where the `Link` pointed, resolved against the page's URL. */
  readonly link: string;

  constructor(link: string, reason: string, response: Response) {
    const message = `The answer's Link names ${link}, ${reason}: the client does not follow it.`;
    super({ error: 'Unsafe Link', message, status: response.status, requestId: response.headers.get('x-request-id') ?? undefined }, response);
    this.link = link;
  }
}

const ERRORS_BY_STATUS: Partial<Record<number, typeof LmsApiError>> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  412: PreconditionFailedError,
  429: ThrottledError,
};

function isApiError(value: unknown): value is ApiError {
  return typeof value === 'object' && value !== null && typeof (value as ApiError).status === 'number' && typeof (value as ApiError).message === 'string';
}

/** The message of an answer that is not the API's error body. */
function describe(error: unknown, response: Response): string {
  // A browser hides a redirect's target from fetch ('opaqueredirect', status 0).
  if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400 && response.status !== 304)) {
    const location = response.headers.get('location');
    const target = location ? ` to ${location}` : '';
    return `The answer is a redirect${target}, which the client does not follow (its token goes to the base URL's origin alone): check the base URL.`;
  }
  return typeof error === 'string' && error ? error : `HTTP ${response.status}`;
}

/**
 * The data of a successful answer (2xx); any other answer is thrown as LmsApiError (its subclass
 * for the status), a 304 included (read `response` yourself when you send If-None-Match).
 */
export function unwrap<Result extends { data?: unknown; error?: unknown; response: Response }>(result: Result): NonNullable<Result['data']> {
  if (!result.response.ok) throw LmsApiError.from(result.error, result.response);
  return result.data as NonNullable<Result['data']>;
}

/** The paths whose GET answers a list: a JSON array, paged by `Link`. */
type GetPath = ClientPathsWithMethod<Client<paths>, 'get'>;
export type ListPath = {
  [P in GetPath]: paths[P]['get'] extends { responses: { 200: { content: { 'application/json': unknown[] } } } } ? P : never;
}[GetPath];
export type ListItem<P extends ListPath> = paths[P]['get']['responses'][200]['content']['application/json'][number];
type ListInit<P extends ListPath> = MaybeOptionalInit<paths[P], 'get'>;
/** The options of a list call: optional unless the path has parameters. */
type ListArguments<P extends ListPath> = undefined extends ListInit<P> ? [init?: ListInit<P>] : [init: ListInit<P>];

/**
 * The URL of the next page, from a list answer's `Link` header, resolved against the page's URL
 * (`pageUrl`, the answer's own URL by default; the API may give it relative); undefined on the last
 * page. When paging by hand, check that it is on the API's origin before sending a token there.
 */
export function nextPage(response: Response, pageUrl: string = response.url): string | undefined {
  const link = /<([^>]+)>\s*;\s*rel="?next"?/.exec(response.headers.get('link') ?? '')?.[1];
  if (link === undefined) return undefined;
  return pageUrl ? new URL(link, pageUrl).href : link;
}

/** A retry the client is about to make, as `onRetry` is told of it. */
export interface RetryEvent {
  method: string;
  url: string;
  /** Which retry this is: 1 for the first. */
  retry: number;
  /** How long the client waits before sending it, in ms. */
  delayMs: number;
  /** The status that is retried (429 or 503)… */
  status?: number;
  /** …or the error of an attempt that got no answer (a connection failure, a timeout). */
  error?: unknown;
}

export interface LmsClientOptions {
  /** The API's base URL, `/api` included: `https://<app>.azurewebsites.net/api`. The token is sent to its origin alone. */
  baseUrl: string;
  /** An access token for the API, or a function giving one per request (MSAL's `acquireTokenSilent`, say). */
  token: string | (() => string | Promise<string>);
  /** Headers sent with every request: `{ 'Accept-Language': 'ja' }` for messages in Japanese. */
  headers?: Record<string, string>;
  /** How long each attempt may take, from sending to the whole answer, in ms (30 s by default); give a call a `signal` to bound it with its retries. */
  timeoutMs?: number;
  /** How many times a request the API did not act on, or may safely act on again, is retried (3 by default; 0 for never). */
  maxRetries?: number;
  /** The longest wait before a retry, in ms (30 s by default): an answer whose `Retry-After` asks for longer is returned as it is. */
  maxRetryDelayMs?: number;
  /** Told of each retry before its wait: log it as you log (`(retry) => logger.warn(retry)`). */
  onRetry?: (retry: RetryEvent) => void;
  /** Another fetch (a proxy, a test double), called as fetch is: `(request, { redirect, signal })`; globalThis.fetch by default. */
  fetch?: (request: Request, init: RequestInit) => Promise<Response>;
}

export interface RagJobWaitOptions {
  /** How long to wait for the job to end, in ms (10 minutes by default); then a `TimeoutError`. */
  timeoutMs?: number;
  /** How often to read the job, in ms (1 s by default). */
  intervalMs?: number;
  /** Stops the wait. */
  signal?: AbortSignal;
}

export interface LmsClient extends Client<paths> {
  /** Each page of a list, following `Link: <…>; rel="next"` on the base URL's origin until the last page. Throws LmsApiError. */
  pages<P extends ListPath>(path: P, ...init: ListArguments<P>): AsyncGenerator<ListItem<P>[], void, undefined>;
  /** Each item of a list, reading a page at a time as the loop reaches it: `for await (const task of lms.items('/tasks'))`. Throws LmsApiError. */
  items<P extends ListPath>(path: P, ...init: ListArguments<P>): AsyncGenerator<ListItem<P>, void, undefined>;
  /** Every item of a list, from all its pages. Throws LmsApiError. */
  all<P extends ListPath>(path: P, ...init: ListArguments<P>): Promise<ListItem<P>[]>;
  /** The RAG job once it has ended (Succeeded, Failed or Cancelled), read every `intervalMs`; a `TimeoutError` after `timeoutMs`. */
  waitForRagJob(jobId: string, options?: RagJobWaitOptions): Promise<RagJob>;
}

/** The paths whose POST honours `Idempotency-Key`: the creates, and the start of a RAG rebuild. */
type PostHeaders<P extends keyof paths> = paths[P] extends { post: { parameters: { header?: infer Header } } } ? NonNullable<Header> : never;
export type CreatePath = {
  [P in keyof paths]: [PostHeaders<P>] extends [never] ? never : 'Idempotency-Key' extends keyof PostHeaders<P> ? P : never;
}[keyof paths];
// Every create, no more and no fewer: the type checker holds this list to the document.
const CREATES: Record<CreatePath, true> = { '/projects': true, '/tasks': true, '/webhooks': true, '/rag/index': true };

/** Requests that may be sent again after the API may have acted on them: repeating them changes nothing more. */
const REPEATABLE_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
/** Node's codes for a connection that was never made: the request was not sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT']);
const RAG_JOB_ENDED = new Set<RagJob['status']>(['Succeeded', 'Failed', 'Cancelled']);

interface TransportOptions {
  send: (request: Request, init: RequestInit) => Promise<Response>;
  origin: string;
  timeoutMs: number;
  maxRetries: number;
  maxRetryDelayMs: number;
  onRetry: ((retry: RetryEvent) => void) | undefined;
}

/**
 * The fetch under openapi-fetch: it sends to the base URL's origin alone, follows no redirect (a
 * 3xx is handed back), bounds each attempt by `timeoutMs`, and retries what the API did not act on
 * or may safely act on again. A 429 (the API did not act) and a connection never made are retried
 * for every request; a 503, or an attempt that got no answer, only when repeating it is harmless:
 * GET, PUT, DELETE, and the POSTs that carry an `Idempotency-Key`. Waits follow `Retry-After`, else
 * grow from half a second. Any other answer or failure is returned or thrown at once.
 */
function transport({ send, origin, timeoutMs, maxRetries, maxRetryDelayMs, onRetry }: TransportOptions) {
  return async (request: Request): Promise<Response> => {
    if (new URL(request.url).origin !== origin) {
      throw new Error(`The client sends its token to the base URL's origin (${origin}) alone, not to ${new URL(request.url).origin}.`);
    }
    const repeatable = REPEATABLE_METHODS.has(request.method) || request.headers.has('Idempotency-Key');
    const retryBefore = async (retry: number, delayMs: number, cause: { status: number } | { error: unknown }) => {
      onRetry?.({ method: request.method, url: request.url, retry, delayMs, ...cause });
      await sleep(delayMs, request.signal);
    };
    for (let attempt = 0; ; attempt++) {
      const backoff = Math.min(maxRetryDelayMs, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
      let response: Response;
      try {
        response = await send(request.clone(), { redirect: 'manual', signal: attemptSignal(request.signal, timeoutMs) });
      } catch (error) {
        if (attempt >= maxRetries || request.signal.aborted || !(repeatable || notConnected(error))) throw error;
        await retryBefore(attempt + 1, backoff, { error });
        continue;
      }
      const retried = response.status === 429 || (response.status === 503 && repeatable);
      if (!retried || attempt >= maxRetries) return response;
      const delay = retryAfterMs(response.headers) ?? backoff;
      if (delay > maxRetryDelayMs) return response;
      await response.body?.cancel();
      await retryBefore(attempt + 1, delay, { status: response.status });
    }
  };
}

/**
 * A signal that aborts when the call's does, or with a TimeoutError after `timeoutMs`. Its controller is held by
 * the timer, and it goes to fetch in `init`, not on a copied Request: undici loses a copied Request's signal, and a
 * timeout signal nothing holds, to garbage collection (nodejs/undici#4068), and the attempt would then never end.
 */
function attemptSignal(callSignal: AbortSignal, timeoutMs: number): AbortSignal {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`No answer within ${timeoutMs} ms.`, 'TimeoutError')), timeoutMs);
  // Bounds the answer's body too, which is read after fetch returns; the timer keeps no process alive.
  (timer as { unref?: () => void }).unref?.();
  const follow = () => controller.abort(callSignal.reason);
  if (callSignal.aborted) follow();
  else callSignal.addEventListener('abort', follow, { once: true, signal: controller.signal });
  return controller.signal;
}

function notConnected(error: unknown): boolean {
  const code = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return typeof code === 'string' && NOT_CONNECTED.has(code);
}

/** `Retry-After` in ms: a number of seconds, or an HTTP date. */
function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/** The origin of the base URL; a relative one (`/api`) is taken against the page, in a browser. */
function originOf(baseUrl: string): string {
  const page = (globalThis as { location?: { href: string } }).location?.href;
  try {
    return new URL(baseUrl, page).origin;
  } catch {
    throw new TypeError(`baseUrl must be the API's absolute URL, with /api (https://<app>.azurewebsites.net/api): not ${JSON.stringify(baseUrl)}`);
  }
}

/** Sends a page's request to the `Link` URL the server gave (which carries the cursor and every other parameter), and notes where it went. */
function sendTo(url: string | undefined, sent: { url: string }): Middleware {
  return {
    onRequest: ({ request }) => {
      const page = url ? new Request(url, request) : request;
      sent.url = page.url;
      return page;
    },
  };
}

export function createLmsClient({
  baseUrl,
  token,
  headers,
  timeoutMs = 30_000,
  maxRetries = 3,
  maxRetryDelayMs = 30_000,
  onRetry,
  fetch,
}: LmsClientOptions): LmsClient {
  const origin = originOf(baseUrl);
  const send = fetch ?? ((request: Request, init: RequestInit) => globalThis.fetch(request, init));
  const client = createClient<paths>({
    baseUrl,
    ...(headers ? { headers } : {}),
    fetch: transport({ send, origin, timeoutMs, maxRetries, maxRetryDelayMs, onRetry }),
  });
  client.use({
    async onRequest({ request, schemaPath }) {
      request.headers.set('Authorization', `Bearer ${typeof token === 'string' ? token : await token()}`);
      // A key of the client's own makes the create safe to retry: the API answers a repeat with the first result.
      if (request.method === 'POST' && schemaPath in CREATES && !request.headers.has('Idempotency-Key')) {
        request.headers.set('Idempotency-Key', crypto.randomUUID());
      }
      return request;
    },
  });
  // openapi-fetch cannot infer the answer of a path that is itself generic; ListItem<P> states it.
  const getPage = client.GET as (path: string, init: object) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

  async function* pages<P extends ListPath>(path: P, ...[init]: ListArguments<P>): AsyncGenerator<ListItem<P>[], void, undefined> {
    const read = new Set<string>();
    let next: string | undefined;
    do {
      const sent = { url: '' };
      const answer = await getPage(path, { ...init, middleware: [...(init?.middleware ?? []), sendTo(next, sent)] });
      const items = unwrap(answer) as ListItem<P>[];
      read.add(sent.url);
      next = nextPage(answer.response, sent.url || answer.response.url);
      if (next !== undefined && new URL(next).origin !== origin) {
        throw new UnsafeLinkError(next, `on another origin than the base URL's (${origin})`, answer.response);
      }
      if (next !== undefined && read.has(next)) throw new UnsafeLinkError(next, 'a page already read: paging would never end', answer.response);
      yield items;
    } while (next !== undefined);
  }

  async function* items<P extends ListPath>(path: P, ...init: ListArguments<P>): AsyncGenerator<ListItem<P>, void, undefined> {
    for await (const page of pages(path, ...init)) yield* page;
  }

  async function all<P extends ListPath>(path: P, ...init: ListArguments<P>): Promise<ListItem<P>[]> {
    const found: ListItem<P>[] = [];
    for await (const page of pages(path, ...init)) found.push(...page);
    return found;
  }

  async function waitForRagJob(jobId: string, { timeoutMs = 600_000, intervalMs = 1_000, signal }: RagJobWaitOptions = {}): Promise<RagJob> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const job = unwrap(await client.GET('/rag/jobs/{jobId}', { params: { path: { jobId } }, ...(signal ? { signal } : {}) }));
      if (RAG_JOB_ENDED.has(job.status)) return job;
      if (performance.now() + intervalMs > deadline) throw new DOMException(`RAG job ${jobId} is still ${job.status} after ${timeoutMs} ms.`, 'TimeoutError');
      await sleep(intervalMs, signal);
    }
  }

  return Object.assign(client, { pages, items, all, waitForRagJob });
}

/** A delivery's body: the event, as docs/webhooks.md lists them. */
export interface WebhookEvent {
  type: components['schemas']['Webhook']['events'][number];
  /** When the change was made, ISO 8601. */
  timestamp: string;
  /** The resource after the change (`{ id, … }` for a delete). */
  data: Record<string, unknown>;
}

/**
 * The event a webhook delivery carries, once its signature is checked as the Standard Webhooks
 * specification says (HMAC-SHA256; any one of several signatures after a rotation; a timestamp within
 * 5 minutes of now), by the `standardwebhooks` library. Throws WebhookVerificationError otherwise.
 * `body` is the raw body as received, before any JSON parsing: a string, or its bytes (a Node
 * `Buffer`, a `Uint8Array`, an `ArrayBuffer`), which are read as UTF-8.
 */
export function verifyWebhook(
  secret: string,
  headers: Headers | Record<string, string | string[] | undefined>,
  body: string | Uint8Array | ArrayBuffer,
): WebhookEvent {
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  const named = Object.fromEntries(entries.flatMap(([name, value]) => (value === undefined ? [] : [[name, Array.isArray(value) ? value.join(' ') : value]])));
  const text = typeof body === 'string' ? body : new TextDecoder('utf-8', { ignoreBOM: true }).decode(body);
  return new Webhook(secret).verify(text, named) as WebhookEvent;
}
