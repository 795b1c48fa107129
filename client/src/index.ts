/**
 * A typed client for the LMS Platform API: openapi-fetch over the types that openapi-typescript
 * generates from the API's OpenAPI document into schema.ts. Every path, parameter, body and answer is
 * typed from the document; this file adds the token, default headers, safe retries, paging through
 * `Link`, errors as LmsApiError, and webhook verification.
 */
import createClient, { type Client, type ClientOptions, type ClientPathsWithMethod, type MaybeOptionalInit, type Middleware } from 'openapi-fetch';
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

/** An error answer of the API, thrown by `unwrap`, `pages` and `all`. */
export class LmsApiError extends Error implements ApiError {
  override readonly name = 'LmsApiError';
  readonly status: number;
  /** The status's short name: `Not Found`, `Precondition Failed`, … */
  readonly error: string;
  /** For validation errors: each field or parameter refused, and why. */
  readonly details: ApiError['details'];
  /** Identifies the request in the service log: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** The whole body, with the fields some errors add (`claims`, `activeJobId`). */
  readonly body: ApiError;
  /** The answer, for its headers (`Retry-After`, `WWW-Authenticate`). */
  readonly response: Response;

  constructor(body: ApiError, response: Response) {
    super(body.message);
    this.status = body.status;
    this.error = body.error;
    this.details = body.details;
    this.requestId = body.requestId;
    this.body = body;
    this.response = response;
  }

  /** The error of an answer; one that did not come from the API (a proxy's HTML page, say) is described from its status. */
  static from(error: unknown, response: Response): LmsApiError {
    const body = isApiError(error)
      ? error
      : { error: response.statusText, message: typeof error === 'string' && error ? error : `HTTP ${response.status}`, status: response.status };
    return new LmsApiError(body, response);
  }
}

function isApiError(value: unknown): value is ApiError {
  return typeof value === 'object' && value !== null && typeof (value as ApiError).status === 'number' && typeof (value as ApiError).message === 'string';
}

/**
 * The data of a successful answer (2xx); any other answer is thrown as LmsApiError, a 304 included
 * (read `response` yourself when you send If-None-Match).
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

/** The URL of the next page, from a list answer's `Link` header; undefined on the last page. */
export function nextPage(response: Response): string | undefined {
  return /<([^>]+)>\s*;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
}

export interface LmsClientOptions {
  /** The API's base URL, `/api` included: `https://<app>.azurewebsites.net/api`. */
  baseUrl: string;
  /** An access token for the API, or a function giving one per request (MSAL's `acquireTokenSilent`, say). */
  token: string | (() => string | Promise<string>);
  /** Headers sent with every request: `{ 'Accept-Language': 'ja' }` for messages in Japanese. */
  headers?: Record<string, string>;
  /** How many times a 429, a 503 or a connection failure is retried (3 by default; 0 for never). */
  maxRetries?: number;
  /** The longest wait before a retry, in ms (30 s by default): an answer whose `Retry-After` asks for longer is returned as it is. */
  maxRetryDelayMs?: number;
  /** Another fetch (a proxy, a test double); globalThis.fetch by default. */
  fetch?: ClientOptions['fetch'];
}

export interface LmsClient extends Client<paths> {
  /** Each page of a list, following `Link: <…>; rel="next"` as it is until the last page. Throws LmsApiError. */
  pages<P extends ListPath>(path: P, ...init: ListArguments<P>): AsyncGenerator<ListItem<P>[], void, undefined>;
  /** Every item of a list, from all its pages. Throws LmsApiError. */
  all<P extends ListPath>(path: P, ...init: ListArguments<P>): Promise<ListItem<P>[]>;
}

/** Sends the request to the `Link` URL the server gave, which carries the cursor and every other parameter. */
function sendTo(url: string): Middleware {
  return { onRequest: ({ request }) => new Request(url, request) };
}

/** The paths whose POST honours `Idempotency-Key`: the creates, and the start of a RAG rebuild. */
type PostHeaders<P extends keyof paths> = paths[P] extends { post: { parameters: { header?: infer Header } } } ? NonNullable<Header> : never;
export type CreatePath = {
  [P in keyof paths]: [PostHeaders<P>] extends [never] ? never : 'Idempotency-Key' extends keyof PostHeaders<P> ? P : never;
}[keyof paths];
// Every create, no more and no fewer: the type checker holds this list to the document.
const CREATES: Record<CreatePath, true> = { '/projects': true, '/tasks': true, '/webhooks': true, '/rag/index': true };

/** The status codes that say the API did not do it, so any request may be sent again. */
const RETRIED_STATUSES = new Set([429, 503]);
/** Requests that may be sent again after an answer was lost: repeating them changes nothing more. */
const REPEATABLE_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
/** Node's codes for a connection that was never made: the request was not sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * A fetch that retries: a 429 or 503 (the API did not do it) for any request, after the wait its
 * `Retry-After` asks for; a connection failure for a request that was never sent, or whose repeat is
 * harmless (GET, PUT, DELETE, and creates, which carry an `Idempotency-Key`). Waits without a
 * `Retry-After` grow from half a second. Any other answer or failure is returned or thrown at once.
 */
function retrying(send: (request: Request) => Promise<Response>, maxRetries: number, maxRetryDelayMs: number) {
  return async (request: Request): Promise<Response> => {
    const repeatable = REPEATABLE_METHODS.has(request.method) || request.headers.has('Idempotency-Key');
    for (let attempt = 0; ; attempt++) {
      const backoff = Math.min(maxRetryDelayMs, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
      let response: Response;
      try {
        response = await send(request.clone());
      } catch (error) {
        if (attempt >= maxRetries || request.signal.aborted || !(repeatable || notConnected(error))) throw error;
        await sleep(backoff);
        continue;
      }
      if (!RETRIED_STATUSES.has(response.status) || attempt >= maxRetries) return response;
      const delay = retryAfterMs(response.headers) ?? backoff;
      if (delay > maxRetryDelayMs) return response;
      await response.body?.cancel();
      await sleep(delay);
    }
  };
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createLmsClient({ baseUrl, token, headers, maxRetries = 3, maxRetryDelayMs = 30_000, fetch }: LmsClientOptions): LmsClient {
  const send = fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<paths>({ baseUrl, ...(headers ? { headers } : {}), fetch: retrying(send, maxRetries, maxRetryDelayMs) });
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
    let next: string | undefined;
    do {
      const middleware = [...(init?.middleware ?? []), ...(next ? [sendTo(next)] : [])];
      const answer = await getPage(path, { ...init, middleware });
      yield unwrap(answer) as ListItem<P>[];
      next = nextPage(answer.response);
    } while (next);
  }

  async function all<P extends ListPath>(path: P, ...init: ListArguments<P>): Promise<ListItem<P>[]> {
    const items: ListItem<P>[] = [];
    for await (const page of pages(path, ...init)) items.push(...page);
    return items;
  }

  return Object.assign(client, { pages, all });
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
 * `body` is the raw body as received, before any JSON parsing.
 */
export function verifyWebhook(secret: string, headers: Headers | Record<string, string | string[] | undefined>, body: string): WebhookEvent {
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  const named = Object.fromEntries(entries.flatMap(([name, value]) => (value === undefined ? [] : [[name, Array.isArray(value) ? value.join(' ') : value]])));
  return new Webhook(secret).verify(body, named) as WebhookEvent;
}
