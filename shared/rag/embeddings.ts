/**
 * Client for an OpenAI-compatible embeddings API: OpenAI itself, Azure OpenAI, or a local stand-in.
 *
 * `POST <endpoint>` with `{ input: string[], model? }` answers `{ data: [{ index, embedding }], model, usage }`.
 * Inputs go in batches, one batch at a time; a batch that finds the service unavailable (5xx,
 * network, timeout) is retried within a bounded budget; a throttled one (429) ends the call with
 * EmbeddingsThrottledError, for the caller to come back when the service says; anything else fails at once.
 * The API key is sent only in its header: it never appears in an error or a log line.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { readBefore } from '../lib/read-before.js';
import type { EmbeddingsSettings } from '../settings/read.js';

export interface EmbedderOptions {
  /** Inputs per request. Default 16. */
  batchSize?: number;
  /** Attempts per request, the first included, before giving up. Default 6. */
  maxAttempts?: number;
  /** Longest wait between attempts, whatever Retry-After asks for. Default 20 s. */
  maxRetryDelayMs?: number;
  /** Per request. Default 30 s. */
  requestTimeoutMs?: number;
  /** Waits between attempts; tests pass one that records the waits and returns at once. */
  sleep?: (milliseconds: number) => Promise<void>;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

export interface Embedder {
  /** One vector per text, in the texts' order. */
  embed(texts: string[]): Promise<number[][]>;
}

/** The endpoint refused the request (a 4xx other than 429) or answered with something that is not embeddings. */
export class EmbeddingsRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'EmbeddingsRequestError';
  }
}

/**
 * The endpoint throttled (429). Nothing here waits for it: the caller decides when to come back
 * (a RAG batch goes back to the queue for `retryAfterMs`). `done` holds the vectors of the texts
 * embedded before the throttling, in order, so that none of them has to be embedded again.
 */
export class EmbeddingsThrottledError extends Error {
  constructor(
    readonly retryAfterMs: number,
    readonly done: number[][],
    message: string,
  ) {
    super(message);
    this.name = 'EmbeddingsThrottledError';
  }
}

/**
 * The endpoint kept failing until the attempts ran out; the cause is the last failure. `done` holds the
 * vectors of the texts embedded before, in order, as EmbeddingsThrottledError's does.
 */
export class EmbeddingsUnavailableError extends Error {
  constructor(
    readonly attempts: number,
    readonly done: number[][],
    message: string,
    cause: unknown,
  ) {
    super(message, { cause });
    this.name = 'EmbeddingsUnavailableError';
  }
}

export const DEFAULT_BATCH_SIZE = 16;
const DEFAULT_MAX_ATTEMPTS = 6;
const DEFAULT_MAX_RETRY_DELAY_MS = 20_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const FIRST_BACKOFF_MS = 500;
/** How long to stay away after a 429 that does not say, and the longest a 429 may ask for. */
const DEFAULT_THROTTLED_MS = 1_000;
const MAX_THROTTLED_MS = 10 * 60_000;
// The server failures OpenAI and Azure say to retry; any other 4xx would fail the same way again (429 is the caller's to wait out).
const RETRIED_STATUSES = new Set([500, 502, 503, 504]);
// Azure OpenAI and Azure AI services take the key in `api-key`; everything else as a bearer token.
const API_KEY_HEADER_HOST_SUFFIXES = ['.openai.azure.com', '.cognitiveservices.azure.com', '.services.ai.azure.com'];

export function createEmbedder(settings: EmbeddingsSettings, options: EmbedderOptions = {}): Embedder {
  const url = embeddingsUrl(settings.endpoint);
  // Errors name the endpoint without its query: some gateways take a key or signature there.
  const where = `${url.origin}${url.pathname}`;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS;
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const sleep = options.sleep ?? ((milliseconds: number) => delay(milliseconds));
  const send = options.fetch ?? fetch;
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError('batchSize must be a positive integer');
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new RangeError('maxAttempts must be a positive integer');
  const headers = { 'content-type': 'application/json', accept: 'application/json', ...authorizationHeader(url, settings.apiKey) };
  const redact = (text: string) => redactSecrets(text, settings.apiKey);

  /** The vectors, or why this attempt may succeed later; throws when it will not, or when the endpoint throttles. */
  async function attempt(input: string[], done: number[][]): Promise<{ vectors: number[][] } | TransientFailure> {
    let response: Response;
    // One deadline for the answer, its body included.
    const signal = AbortSignal.timeout(requestTimeoutMs);
    try {
      response = await send(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ input, ...(settings.model ? { model: settings.model } : {}) }),
        signal,
        // Never followed: it would carry the key to wherever it points.
        redirect: 'manual',
      });
    } catch (error) {
      return { reason: `could not be reached (${networkErrorName(error)})`, cause: error, retryAfterMs: undefined };
    }
    if (response.status === 429) {
      const wait = Math.min(retryAfterMs(response.headers) ?? DEFAULT_THROTTLED_MS, MAX_THROTTLED_MS);
      throw new EmbeddingsThrottledError(wait, done, `Embeddings endpoint ${where} throttled: ${redact(await apiErrorMessage(response, signal))}`);
    }
    if (RETRIED_STATUSES.has(response.status)) {
      const reason = `answered ${response.status}: ${redact(await apiErrorMessage(response, signal))}`;
      return {
        reason,
        cause: new EmbeddingsRequestError(response.status, `Embeddings endpoint ${where} ${reason}`),
        retryAfterMs: retryAfterMs(response.headers),
      };
    }
    if (response.status >= 300 && response.status < 400) {
      // Unread, it would hold its connection.
      await response.body?.cancel();
      throw new EmbeddingsRequestError(
        response.status,
        `Embeddings endpoint ${where} redirects (${response.status}), which is not followed: set the URL it redirects to`,
      );
    }
    if (!response.ok) {
      throw new EmbeddingsRequestError(
        response.status,
        `Embeddings endpoint ${where} refused the request with ${response.status}: ${redact(await apiErrorMessage(response, signal))}`,
      );
    }
    const vectors = vectorsInInputOrder(await readBefore(signal, response.json()).catch(() => undefined), input.length);
    if (!vectors) throw new EmbeddingsRequestError(response.status, `Embeddings endpoint ${where} answered with a body that is not ${input.length} embeddings`);
    return { vectors };
  }

  async function embedBatch(input: string[], done: number[][]): Promise<number[][]> {
    for (let attempts = 1; ; attempts += 1) {
      const outcome = await attempt(input, done);
      if ('vectors' in outcome) return outcome.vectors;
      if (attempts >= maxAttempts) {
        const message = `Gave up after attempt ${attempts}: embeddings endpoint ${where} ${outcome.reason}`;
        throw new EmbeddingsUnavailableError(attempts, done, message, outcome.cause);
      }
      await sleep(Math.min(outcome.retryAfterMs ?? backoffMs(attempts), maxRetryDelayMs));
    }
  }

  return {
    async embed(texts) {
      const vectors: number[][] = [];
      for (let start = 0; start < texts.length; start += batchSize) {
        vectors.push(...(await embedBatch(texts.slice(start, start + batchSize), vectors)));
      }
      return vectors;
    },
  };
}

interface TransientFailure {
  reason: string;
  cause: unknown;
  /** What the service asked for, if it said. */
  retryAfterMs: number | undefined;
}

/** A base URL gets `/embeddings` appended; a URL already ending in it is used as is. The query stays either way. */
function embeddingsUrl(endpoint: string): URL {
  const url = new URL(endpoint);
  const path = url.pathname.replace(/\/+$/, '');
  url.pathname = path.endsWith('/embeddings') ? path : `${path}/embeddings`;
  return url;
}

function authorizationHeader(url: URL, apiKey: string | undefined): Record<string, string> {
  if (!apiKey) return {};
  const host = url.hostname.toLowerCase();
  return API_KEY_HEADER_HOST_SUFFIXES.some((suffix) => host.endsWith(suffix)) ? { 'api-key': apiKey } : { authorization: `Bearer ${apiKey}` };
}

/** `retry-after-ms` (Azure's, more precise) before `Retry-After` in seconds or as an HTTP date. */
function retryAfterMs(headers: Headers): number | undefined {
  const milliseconds = headers.get('retry-after-ms')?.trim();
  if (milliseconds && /^\d+(\.\d+)?$/.test(milliseconds)) return Number(milliseconds);
  const retryAfter = headers.get('retry-after')?.trim();
  if (!retryAfter) return undefined;
  if (/^\d+(\.\d+)?$/.test(retryAfter)) return Number(retryAfter) * 1000;
  const date = Date.parse(retryAfter);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** 500 ms, 1 s, 2 s, ... each within ±25 %, so clients throttled together do not come back together. */
function backoffMs(attempts: number): number {
  return FIRST_BACKOFF_MS * 2 ** (attempts - 1) * (0.75 + Math.random() * 0.5);
}

/** OpenAI and Azure both say `{ error: { message } }`; anything else is quoted, briefly. */
async function apiErrorMessage(response: Response, signal: AbortSignal): Promise<string> {
  const text = await readBefore(signal, response.text()).catch(() => '');
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string' && message) return message;
  } catch {
    // Not JSON: a proxy's page, say.
  }
  return text.trim().slice(0, 200) || response.statusText || 'no message';
}

/** The key itself, and keys the API echoes masked (OpenAI's `sk-abc****wxyz` shows both ends). */
function redactSecrets(text: string, apiKey: string | undefined): string {
  const withoutKey = apiKey ? text.replaceAll(apiKey, '[redacted]') : text;
  return withoutKey.replace(/\S*\*{4,}\S*/g, '[redacted]');
}

/** fetch fails with "fetch failed" and the socket's error as its cause: the cause says more. */
function networkErrorName(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'timed out';
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  if (typeof cause?.code === 'string') return cause.code;
  return error instanceof Error ? error.message : String(error);
}

/** The response's vectors ordered by their `index`, or undefined unless it holds exactly one for each input. */
function vectorsInInputOrder(body: unknown, count: number): number[][] | undefined {
  const data = (body as { data?: unknown } | undefined)?.data;
  if (!Array.isArray(data) || data.length !== count) return undefined;
  const vectors: number[][] = new Array<number[]>(count);
  for (const item of data as unknown[]) {
    const { index, embedding } = (item ?? {}) as { index?: unknown; embedding?: unknown };
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= count || vectors[index as number]) return undefined;
    if (!Array.isArray(embedding) || embedding.length === 0 || !embedding.every((value) => Number.isFinite(value))) return undefined;
    vectors[index as number] = embedding as number[];
  }
  return vectors;
}
