/**
 * A typed client for the LMS Platform API: openapi-fetch over the types that openapi-typescript
 * generates from openapi.json into schema.d.ts (`npm run openapi` regenerates both). Every path,
 * parameter, body and answer is typed from the document; this file only adds the token.
 */
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths };
export type Project = components['schemas']['Project'];
export type Task = components['schemas']['Task'];
export type User = components['schemas']['User'];
export type RagJob = components['schemas']['RagJob'];
/** The body of every error answer. */
export type ApiError = components['schemas']['Error'];

export interface LmsClientOptions {
  /** The API's base URL, `/api` included: `https://<app>.azurewebsites.net/api`. */
  baseUrl: string;
  /** An access token for the API, or a function giving one per request (MSAL's `acquireTokenSilent`, say). */
  token: string | (() => string | Promise<string>);
  /** Another fetch (a proxy, a test double); globalThis.fetch by default. */
  fetch?: ClientOptions['fetch'];
}

export type LmsClient = Client<paths>;

export function createLmsClient({ baseUrl, token, fetch }: LmsClientOptions): LmsClient {
  const client = createClient<paths>({ baseUrl, ...(fetch ? { fetch } : {}) });
  client.use({
    async onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${typeof token === 'string' ? token : await token()}`);
      return request;
    },
  });
  return client;
}

/** The cursor of the next page, from a list answer's `Link` header; undefined on the last page. */
export function nextCursor(response: Response): string | undefined {
  const next = /<([^>]+)>\s*;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
  return next ? (new URL(next).searchParams.get('cursor') ?? undefined) : undefined;
}
