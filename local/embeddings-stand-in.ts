/**
 * Local stand-in for an OpenAI-compatible embeddings API, over plain HTTP on loopback.
 *
 * It answers `POST /v1/embeddings` as OpenAI does (`model` required) and
 * `POST /openai/deployments/<deployment>/embeddings?api-version=...` as Azure OpenAI does (the deployment
 * names the model). Both take the key as `Authorization: Bearer <key>` or `api-key: <key>`, and `input` as a
 * string or an array of up to 2048 non-empty strings. Vectors are deterministic: unit length, derived from a
 * hash of the text, so equal texts get equal vectors in every run. Errors have OpenAI's shape
 * `{ error: { message, type, param, code } }`.
 *
 * The answer lists vectors in reverse: the protocol orders them by `index`, not by position, so a client
 * relying on position finds out here rather than against the real service.
 */
import { createHash } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { close, listen, readBody, sendJson as sendJsonAnswer } from './embedded-http.js';
import { keepIdleConnectionsOpen } from './idle-connections.js';

/** A status answered with the service's error body, or 'drop': the connection is closed without an answer. */
export type EmbeddingsFailure = number | 'drop';

export interface EmbeddingsStandInOptions {
  /** The key callers must present. */
  apiKey: string;
  /** 0 picks a free port. Default 0. */
  port?: number;
  /** Listen address. Default '127.0.0.1'. */
  host?: string;
  /** Length of every vector. Default 32. */
  dimensions?: number;
  /** The model an Azure deployment reports in its answers. Default 'text-embedding-3-small'. */
  deploymentModel?: string;
  /** A rate limit, as the real services have: past this many requests in a second, a 429 that says when the second ends. */
  requestsPerSecond?: number;
}

/** What the stand-in saw of a request, and what it answered. */
export interface ReceivedEmbeddingsRequest {
  path: string;
  /** The query string, with its '?', or ''. */
  query: string;
  /** Which header carried a key, if any; 'bearer' wins when both are sent. */
  authorization: 'bearer' | 'api-key' | 'none';
  /** The texts to embed, when the body had a valid `input`. */
  inputs: string[] | undefined;
  model: string | undefined;
  status: number | 'drop';
}

export interface EmbeddingsStandIn {
  /** 'http://127.0.0.1:<port>/v1': an OpenAI-style base URL, the value for EMBEDDINGS_ENDPOINT. */
  url: string;
  /** An Azure OpenAI deployment's full embeddings URL, with its api-version. */
  azureUrl(deployment: string): string;
  port: number;
  /** Requests received, failed ones included; inputs embedded in successful answers. */
  counts: { requests: number; inputs: number };
  /** Every request, in order. */
  received: ReceivedEmbeddingsRequest[];
  /**
   * Answers the next `count` requests with `status` (default 429) instead of embeddings. With retryAfterSeconds,
   * the answer says when to come back: `Retry-After` in whole seconds, and on the Azure route also `retry-after-ms`.
   */
  failNext(count: number, status?: EmbeddingsFailure, retryAfterSeconds?: number): void;
  /** Makes every answer from now on take this long, as a real service's do (default 0). */
  setLatency(milliseconds: number): void;
  close(): Promise<void>;
}

export const STAND_IN_DEFAULT_DIMENSIONS = 32;
export const STAND_IN_MAX_INPUTS = 2048;
const AZURE_API_VERSION = '2024-10-21';
const AZURE_ROUTE = /^\/openai\/deployments\/([^/]+)\/embeddings$/;
const OPENAI_ROUTE = '/v1/embeddings';
const REQUEST_FIELDS = ['input', 'model', 'encoding_format', 'user'];

/** The service's words for the failures a test can ask for; other statuses get a generic message. */
const FAILURES: Record<number, { message: string; type: string; code: string | null }> = {
  429: { message: 'Rate limit reached for requests. Please try again later.', type: 'requests', code: 'rate_limit_exceeded' },
  500: { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error', code: null },
  503: { message: 'The server is overloaded or not ready yet.', type: 'server_error', code: null },
};

/** The vector the stand-in gives `text`: bytes of SHA-256 over the text, mapped to [-1, 1] and scaled to unit length. */
export function standInEmbedding(text: string, dimensions = STAND_IN_DEFAULT_DIMENSIONS): number[] {
  const bytes: number[] = [];
  for (let block = 0; bytes.length < dimensions; block += 1) bytes.push(...createHash('sha256').update(`${block}:${text}`).digest());
  const raw = bytes.slice(0, dimensions).map((byte) => byte / 127.5 - 1);
  const length = Math.hypot(...raw) || 1;
  return raw.map((value) => value / length);
}

export async function startEmbeddingsStandIn(options: EmbeddingsStandInOptions): Promise<EmbeddingsStandIn> {
  const host = options.host ?? '127.0.0.1';
  const dimensions = options.dimensions ?? STAND_IN_DEFAULT_DIMENSIONS;
  const deploymentModel = options.deploymentModel ?? 'text-embedding-3-small';
  const counts = { requests: 0, inputs: 0 };
  const received: ReceivedEmbeddingsRequest[] = [];
  let failures: { remaining: number; status: EmbeddingsFailure; retryAfterSeconds: number | undefined } | undefined;
  const second = { started: 0, requests: 0 };
  let latencyMs = 0;

  /** The seconds until a request may come, or undefined when this one is within the rate limit. */
  function overLimit(): number | undefined {
    if (options.requestsPerSecond === undefined) return undefined;
    const now = Date.now();
    if (now - second.started >= 1000) Object.assign(second, { started: now, requests: 0 });
    if (second.requests < options.requestsPerSecond) {
      second.requests += 1;
      return undefined;
    }
    return (second.started + 1000 - now) / 1000;
  }

  const server = keepIdleConnectionsOpen(
    http.createServer((request, response) => {
      handleRequest(request, response).catch((error: unknown) => {
        console.error('embeddings stand-in: request failed', error);
        if (!response.headersSent) sendJson(response, 500, errorBody(FAILURES[500]!.message, 'server_error'));
      });
    }),
  );

  async function handleRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    counts.requests += 1;
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const body = await readBody(request);
    const record: ReceivedEmbeddingsRequest = {
      path: url.pathname,
      query: url.search,
      authorization: presentedKey(request)?.scheme ?? 'none',
      inputs: undefined,
      model: undefined,
      status: 200,
    };
    received.push(record);
    const azure = AZURE_ROUTE.test(url.pathname);
    if (latencyMs > 0) await delay(latencyMs);

    const wait = overLimit();
    if (wait !== undefined) {
      record.status = 429;
      sendJson(response, 429, failureBody(429), retryAfterHeaders(wait, azure));
      return;
    }
    if (failures) {
      const { status, retryAfterSeconds } = failures;
      failures.remaining -= 1;
      if (failures.remaining <= 0) failures = undefined;
      record.status = status;
      if (status === 'drop') {
        request.socket.destroy();
        return;
      }
      sendJson(response, status, failureBody(status), retryAfterSeconds === undefined ? {} : retryAfterHeaders(retryAfterSeconds, azure));
      return;
    }

    try {
      if (request.method !== 'POST' || !(azure || url.pathname === OPENAI_ROUTE)) {
        throw new StandInError(404, `Invalid URL (${request.method} ${url.pathname})`, 'invalid_request_error');
      }
      if (azure && !url.searchParams.has('api-version')) throw new StandInError(404, 'Resource not found', 'invalid_request_error', '404');
      const key = presentedKey(request);
      if (!key) {
        throw new StandInError(
          401,
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth " +
            '(i.e. Authorization: Bearer YOUR_KEY) or an api-key header.',
          'invalid_request_error',
        );
      }
      if (key.value !== options.apiKey) {
        throw new StandInError(
          401,
          `Incorrect API key provided: ${maskKey(key.value)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          'invalid_request_error',
          'invalid_api_key',
        );
      }
      const embeddingsRequest = parseEmbeddingsRequest(body, { modelRequired: !azure });
      record.inputs = embeddingsRequest.inputs;
      record.model = embeddingsRequest.model;
      counts.inputs += embeddingsRequest.inputs.length;
      sendJson(response, 200, {
        object: 'list',
        data: embeddingsRequest.inputs.map((text, index) => ({ object: 'embedding', index, embedding: standInEmbedding(text, dimensions) })).reverse(),
        model: azure ? deploymentModel : embeddingsRequest.model,
        usage: { prompt_tokens: tokenEstimate(embeddingsRequest.inputs), total_tokens: tokenEstimate(embeddingsRequest.inputs) },
      });
    } catch (error) {
      if (!(error instanceof StandInError)) throw error;
      record.status = error.status;
      sendJson(response, error.status, errorBody(error.message, error.type, error.code, error.param));
    }
  }

  const port = await listen(server, options.port ?? 0, host, 'embeddings stand-in');
  const origin = `http://${host}:${port}`;

  return {
    url: `${origin}/v1`,
    azureUrl: (deployment) => `${origin}/openai/deployments/${encodeURIComponent(deployment)}/embeddings?api-version=${AZURE_API_VERSION}`,
    port,
    counts,
    received,
    failNext(count, status = 429, retryAfterSeconds) {
      failures = count > 0 ? { remaining: count, status, retryAfterSeconds } : undefined;
    },
    setLatency(milliseconds) {
      latencyMs = milliseconds;
    },
    close: () => close(server),
  };
}

// ---------------------------------------------------------------- requests

interface EmbeddingsRequest {
  inputs: string[];
  model: string | undefined;
}

function parseEmbeddingsRequest(body: string, { modelRequired }: { modelRequired: boolean }): EmbeddingsRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw invalid('We could not parse the JSON body of your request. The embeddings API expects a JSON payload.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid('The request body must be a JSON object.');
  const fields = parsed as Record<string, unknown>;
  const unknownField = Object.keys(fields).find((name) => !REQUEST_FIELDS.includes(name));
  if (unknownField) throw invalid(`Unrecognized request argument supplied: ${unknownField}`, unknownField);
  if (fields.encoding_format !== undefined && fields.encoding_format !== 'float') {
    throw invalid("The local embeddings stand-in supports only encoding_format 'float'.", 'encoding_format');
  }

  const { input, model } = fields;
  if (input === undefined) throw invalid("'input' is a required property", 'input');
  const inputs = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(inputs) || !inputs.every((item): item is string => typeof item === 'string')) {
    throw invalid("'$.input' is invalid: the local embeddings stand-in takes a string or an array of strings (not tokens).", 'input');
  }
  if (inputs.length === 0 || inputs.some((text) => text === '')) {
    throw invalid("'$.input' is invalid: it must be a non-empty string or a non-empty array of non-empty strings.", 'input');
  }
  if (inputs.length > STAND_IN_MAX_INPUTS) throw invalid(`Too many inputs. The max number of inputs is ${STAND_IN_MAX_INPUTS}.`, 'input');
  if (model !== undefined && typeof model !== 'string') throw invalid("'model' must be a string", 'model');
  if (modelRequired && !model) throw invalid('you must provide a model parameter', 'model');
  return { inputs, model };
}

/** The key from `Authorization: Bearer` or `api-key`, and which one carried it. */
function presentedKey(request: IncomingMessage): { scheme: 'bearer' | 'api-key'; value: string } | undefined {
  const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (bearer) return { scheme: 'bearer', value: bearer };
  const apiKey = request.headers['api-key'];
  return typeof apiKey === 'string' && apiKey ? { scheme: 'api-key', value: apiKey } : undefined;
}

/** As OpenAI echoes a wrong key: both ends shown, the middle starred. */
function maskKey(key: string): string {
  return key.length > 12 ? `${key.slice(0, 3)}${'*'.repeat(key.length - 7)}${key.slice(-4)}` : '*'.repeat(Math.max(key.length, 4));
}

/** About four characters a token, as OpenAI's own rule of thumb has it. */
function tokenEstimate(inputs: string[]): number {
  return inputs.reduce((total, text) => total + Math.ceil(text.length / 4), 0);
}

// ---------------------------------------------------------------- HTTP plumbing

class StandInError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

const invalid = (message: string, param: string | null = null) => new StandInError(400, message, 'invalid_request_error', null, param);

function errorBody(message: string, type: string, code: string | null = null, param: string | null = null) {
  return { error: { message, type, param, code } };
}

function failureBody(status: number) {
  const failure = FAILURES[status] ?? { message: `The local embeddings stand-in was told to fail with ${status}.`, type: 'server_error', code: null };
  return errorBody(failure.message, failure.type, failure.code);
}

/** OpenAI sends whole seconds; Azure OpenAI adds the precise `retry-after-ms`. */
function retryAfterHeaders(seconds: number, azure: boolean): Record<string, string> {
  const headers: Record<string, string> = { 'Retry-After': String(Math.ceil(seconds)) };
  if (azure) headers['retry-after-ms'] = String(Math.round(seconds * 1000));
  return headers;
}

// OpenAI names no charset.
function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJsonAnswer(response, status, body, headers, 'application/json');
}
