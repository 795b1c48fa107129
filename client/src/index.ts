/**
 * A typed client for the LMS Platform API: openapi-fetch over the types that openapi-typescript
 * generates from the API's OpenAPI document into schema.ts. Every path, parameter, body and answer is
 * typed from the document; this file adds the token, paging through `Link`, and errors as
 * LmsApiError.
 */
import createClient, { type Client, type ClientOptions, type ClientPathsWithMethod, type MaybeOptionalInit, type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema.js';

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

export function createLmsClient({ baseUrl, token, fetch }: LmsClientOptions): LmsClient {
  const client = createClient<paths>({ baseUrl, ...(fetch ? { fetch } : {}) });
  client.use({
    async onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${typeof token === 'string' ? token : await token()}`);
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
