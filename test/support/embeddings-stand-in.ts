/**
 * A stand-in for an embeddings service on loopback: `POST /v1/embeddings` as OpenAI answers it (`model`
 * required) and `POST /openai/deployments/<deployment>/embeddings?api-version=...` as Azure OpenAI does, with
 * OpenAI's error shape. Vectors are deterministic (standInEmbedding) and listed in reverse: the protocol
 * orders them by `index`, so a client relying on position finds out here.
 */
import { createHash } from 'node:crypto';
import http, { type IncomingMessage } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { close, keepIdleConnectionsOpen, listen, readBody, sendJson } from '../../local/embedded-http.js';

/** A status answered with the service's error body, or 'drop': the connection is closed without an answer. */
export type EmbeddingsFailure = number | 'drop';

export interface EmbeddingsStandInOptions {
  /** The key callers must present. */
  apiKey: string;
  /** Past this many requests in a second, a 429 that says when the second ends, as the real services do. */
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
  /** An OpenAI-style base URL, the value for EMBEDDINGS_ENDPOINT. */
  url: string;
  /** An Azure OpenAI deployment's full embeddings URL, with its api-version. */
  azureUrl(deployment: string): string;
  /** Requests received, failed ones included; inputs embedded in successful answers. */
  counts: { requests: number; inputs: number };
  received: ReceivedEmbeddingsRequest[];
  /**
   * Answers the next `count` requests with `status` (default 429) instead of embeddings. With retryAfterSeconds,
   * the answer says when to come back: `Retry-After` in whole seconds, and on the Azure route also `retry-after-ms`.
   */
  failNext(count: number, status?: EmbeddingsFailure, retryAfterSeconds?: number): void;
  /** Makes every answer from now on take this long, as a real service's do. */
  setLatency(milliseconds: number): void;
  close(): Promise<void>;
}

const DIMENSIONS = 32;
const MAX_INPUTS = 2048;
const AZURE_ROUTE = /^\/openai\/deployments\/[^/]+\/embeddings$/;
const REQUEST_FIELDS = ['input', 'model', 'encoding_format', 'user'];
const FAILURES: Record<number, { message: string; type: string; code?: string }> = {
  429: { message: 'Rate limit reached for requests. Please try again later.', type: 'requests', code: 'rate_limit_exceeded' },
  503: { message: 'The server is overloaded or not ready yet.', type: 'server_error' },
};

/** The vector the stand-in gives `text`: bytes of SHA-256 over the text, mapped to [-1, 1] and scaled to unit length. */
export function standInEmbedding(text: string): number[] {
  const bytes: number[] = [];
  for (let block = 0; bytes.length < DIMENSIONS; block += 1) bytes.push(...createHash('sha256').update(`${block}:${text}`).digest());
  const raw = bytes.slice(0, DIMENSIONS).map((byte) => byte / 127.5 - 1);
  const length = Math.hypot(...raw) || 1;
  return raw.map((value) => value / length);
}

interface ErrorDetails {
  type?: string;
  param?: string;
  code?: string;
  headers?: Record<string, string>;
}

class StandInError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details: ErrorDetails = {},
  ) {
    super(message);
  }
}

export async function startEmbeddingsStandIn(options: EmbeddingsStandInOptions): Promise<EmbeddingsStandIn> {
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
    if (second.requests++ < options.requestsPerSecond) return undefined;
    return (second.started + 1000 - now) / 1000;
  }

  async function answer(request: IncomingMessage, record: ReceivedEmbeddingsRequest, azure: boolean) {
    const body = await readBody(request);
    if (latencyMs > 0) await delay(latencyMs);
    const wait = overLimit();
    if (wait !== undefined) throw failure(429, wait, azure);
    if (failures) {
      const { status, retryAfterSeconds } = failures;
      if (--failures.remaining <= 0) failures = undefined;
      if (status === 'drop') return 'drop';
      throw failure(status, retryAfterSeconds, azure);
    }
    const url = new URL(request.url ?? '/', 'http://stand-in');
    if (request.method !== 'POST' || !(azure || url.pathname === '/v1/embeddings')) {
      throw new StandInError(404, `Invalid URL (${request.method} ${url.pathname})`);
    }
    if (azure && !url.searchParams.has('api-version')) throw new StandInError(404, 'Resource not found', { code: '404' });
    const key = presentedKey(request)?.value;
    if (!key) throw new StandInError(401, "You didn't provide an API key, in an Authorization header using Bearer auth or an api-key header.");
    if (key !== options.apiKey) {
      // OpenAI echoes a wrong key masked: both ends shown.
      const masked = key.length > 12 ? `${key.slice(0, 3)}${'*'.repeat(key.length - 7)}${key.slice(-4)}` : '****';
      throw new StandInError(401, `Incorrect API key provided: ${masked}.`, { code: 'invalid_api_key' });
    }
    const { inputs, model } = parseEmbeddingsRequest(body, !azure);
    Object.assign(record, { inputs, model });
    counts.inputs += inputs.length;
    // About four characters a token, as OpenAI's rule of thumb has it.
    const tokens = inputs.reduce((total, text) => total + Math.ceil(text.length / 4), 0);
    return {
      object: 'list',
      data: inputs.map((text, index) => ({ object: 'embedding', index, embedding: standInEmbedding(text) })).reverse(),
      model: azure ? 'text-embedding-3-small' : model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    };
  }

  const server = keepIdleConnectionsOpen(
    http.createServer((request, response) => {
      counts.requests += 1;
      const url = new URL(request.url ?? '/', 'http://stand-in');
      const authorization = presentedKey(request)?.scheme ?? 'none';
      const record: ReceivedEmbeddingsRequest = { path: url.pathname, query: url.search, authorization, inputs: undefined, model: undefined, status: 200 };
      received.push(record);
      answer(request, record, AZURE_ROUTE.test(url.pathname)).then(
        (body) => {
          if (body !== 'drop') return sendJson(response, 200, body, {}, 'application/json');
          record.status = 'drop';
          request.socket.destroy();
        },
        (error: Error) => {
          const { status, details } = error instanceof StandInError ? error : new StandInError(500, 'The server had an error.', { type: 'server_error' });
          const { type = 'invalid_request_error', param = null, code = null, headers } = details;
          record.status = status;
          sendJson(response, status, { error: { message: error.message, type, param, code } }, headers, 'application/json');
        },
      );
    }),
  );
  const origin = `http://127.0.0.1:${await listen(server, 0, '127.0.0.1', 'embeddings stand-in')}`;

  return {
    url: `${origin}/v1`,
    azureUrl: (deployment) => `${origin}/openai/deployments/${encodeURIComponent(deployment)}/embeddings?api-version=2024-10-21`,
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

function parseEmbeddingsRequest(body: string, modelRequired: boolean): { inputs: string[]; model: string | undefined } {
  const invalid = (message: string, param?: string) => new StandInError(400, message, { param });
  let fields: Record<string, unknown>;
  try {
    fields = JSON.parse(body) as Record<string, unknown>;
  } catch {
    throw invalid('We could not parse the JSON body of your request. The embeddings API expects a JSON payload.');
  }
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) throw invalid('The request body must be a JSON object.');
  const unknownField = Object.keys(fields).find((name) => !REQUEST_FIELDS.includes(name));
  if (unknownField) throw invalid(`Unrecognized request argument supplied: ${unknownField}`, unknownField);
  if (fields.encoding_format !== undefined && fields.encoding_format !== 'float')
    throw invalid('Only encoding_format float is served here.', 'encoding_format');
  const { input, model } = fields;
  const inputs = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(inputs) || inputs.length === 0 || !inputs.every((text) => typeof text === 'string' && text !== '')) {
    throw invalid("'$.input' is invalid: it must be a non-empty string or a non-empty array of non-empty strings.", 'input');
  }
  if (inputs.length > MAX_INPUTS) throw invalid(`Too many inputs. The max number of inputs is ${MAX_INPUTS}.`, 'input');
  if (model !== undefined && typeof model !== 'string') throw invalid("'model' must be a string", 'model');
  if (modelRequired && !model) throw invalid('you must provide a model parameter', 'model');
  return { inputs: inputs as string[], model };
}

/** The service's error for `status`; with retryAfterSeconds, `Retry-After` in whole seconds, and on Azure's route also `retry-after-ms`. */
function failure(status: number, retryAfterSeconds: number | undefined, azure: boolean): StandInError {
  const { message, type, code } = FAILURES[status] ?? { message: `Told to fail with ${status}.`, type: 'server_error', code: undefined };
  const headers: Record<string, string> = {};
  if (retryAfterSeconds !== undefined) headers['Retry-After'] = String(Math.ceil(retryAfterSeconds));
  if (retryAfterSeconds !== undefined && azure) headers['retry-after-ms'] = String(Math.round(retryAfterSeconds * 1000));
  return new StandInError(status, message, { type, code, headers });
}

/** The key from `Authorization: Bearer` or `api-key`, and which one carried it. */
function presentedKey(request: IncomingMessage): { scheme: 'bearer' | 'api-key'; value: string } | undefined {
  const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (bearer) return { scheme: 'bearer', value: bearer };
  const apiKey = request.headers['api-key'];
  return typeof apiKey === 'string' && apiKey ? { scheme: 'api-key', value: apiKey } : undefined;
}
