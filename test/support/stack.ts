import { CosmosClient } from '@azure/cosmos';
import { importJWK, SignJWT, type JWTPayload } from 'jose';
import { Agent, fetch } from 'undici';
import { inject } from 'vitest';
import { LOCAL_CLIENT_ID, LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID } from '../../local/defaults.js';
import { GRAPH_RESOURCE } from '../../local/identity/provider.js';
import { CONTAINERS } from '../../shared/data/containers.js';

export const stack = inject('stack');
export const HOME_TENANT = LOCAL_HOME_TENANT_ID;
export const OTHER_TENANT = LOCAL_OTHER_TENANT_ID;
export const CLIENT_ID = LOCAL_CLIENT_ID;

/**
 * The app settings that point an app a test starts itself at this stack's identity provider and
 * database. Its change feed relay is switched off (as Azure switches off a function, by app setting):
 * the shared host relays the shared database's changes, with its own settings, and a second relay
 * would compete for its lease. A test of background work starts an app on a database of its own.
 */
export const stackAppSettings = {
  AUTH_TENANT_ID: HOME_TENANT,
  AUTH_CLIENT_ID: CLIENT_ID,
  AUTH_AUTHORITY_HOST: stack.authorityHost,
  COSMOS_CONNECTION: stack.cosmosConnectionString,
  COSMOS_DATABASE: 'lms',
  'AzureWebJobs.changes-relay.Disabled': 'true',
  CURSOR_SIGNING_KEY: stack.cursorSigningKey,
  // The Graph stand-ins play the global Graph.
  GRAPH_RESOURCE,
  // A queue of the hosts this file starts: the shared host never takes their messages, nor they its.
  WEBHOOKS_QUEUE_NAME: `webhooks-${crypto.randomUUID().slice(0, 8)}`,
  // Hosts of tests that are not about webhooks: the sweep (once a year) stays out of what they count.
  WEBHOOKS_SWEEP_SCHEDULE: '0 0 0 1 1 *',
};

/**
 * The settings that give an app of a test's own a database of its own, made as deployment makes one,
 * and a RAG queue of its own: its data, its change feed and its leases are its own, so its relay
 * hands over its changes only, with its settings. Spread after the app's other settings.
 */
export async function ownDatabase(): Promise<Record<string, string>> {
  const id = `lms-${crypto.randomUUID().slice(0, 8)}`;
  const client = new CosmosClient({ endpoint: stack.cosmosEndpoint, key: stack.cosmosKey });
  const { database } = await client.databases.createIfNotExists({ id });
  for (const definition of Object.values(CONTAINERS)) await database.containers.createIfNotExists(definition);
  client.dispose();
  // Its relay on: this overrides the shared settings' switch.
  return { COSMOS_DATABASE: id, RAG_QUEUE_NAME: `rag-${id}`, 'AzureWebJobs.changes-relay.Disabled': 'false' };
}

export interface TokenRequest {
  tenant?: string;
  roles?: string[];
  kind?: 'user' | 'app';
  version?: 1 | 2;
  username?: string;
  scope?: string;
}

// undici's fetch, as the global one cannot be given the provider's certificate to trust.
const trustingIdentityProvider = new Agent({ connect: { ca: stack.caCertPem } });

/** POSTs a form to the local identity provider over HTTPS, trusting only its certificate. */
export async function postForm(url: string, form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, { method: 'POST', body: new URLSearchParams(form), dispatcher: trustingIdentityProvider });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const tokens = new Map<string, Promise<string>>();

/** A token from the identity provider's token endpoint, as a real client would get one. */
export function token(options: TokenRequest = {}): Promise<string> {
  const key = JSON.stringify(options);
  let cached = tokens.get(key);
  if (!cached) {
    const { tenant = HOME_TENANT, roles = [], kind = 'user', version = 1, username = 'tester@contoso.test', scope } = options;
    const resource = `api://${CLIENT_ID}`;
    const form: Record<string, string> =
      kind === 'app'
        ? { grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: 'local', scope: `${resource}/.default` }
        : { grant_type: 'password', client_id: CLIENT_ID, username, password: 'local', scope: `${resource}/${scope ?? 'access_as_user'}` };
    Object.assign(form, { roles: roles.join(' '), token_version: String(version) });
    cached = postForm(`${stack.authorityHost}/${tenant}/oauth2/v2.0/token`, form).then(({ status, body }) => {
      if (status !== 200) throw new Error(`token endpoint answered ${status}: ${JSON.stringify(body)}`);
      return body.access_token as string;
    });
    tokens.set(key, cached);
  }
  return cached;
}

/** Signs arbitrary claims with the provider's real key: for tokens the provider would never issue. */
export async function signToken(claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  const key = await importJWK(stack.privateJwk, 'RS256');
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: stack.signingKid, ...header }).sign(key);
}

/** Claims like the provider's v1 user tokens, valid now, for tests that change one thing. */
export function userClaims(overrides: JWTPayload = {}): JWTPayload {
  const now = Math.floor(Date.now() / 1000);
  return {
    aud: `api://${CLIENT_ID}`,
    iss: `https://sts.windows.net/${HOME_TENANT}/`,
    iat: now,
    nbf: now,
    exp: now + 3600,
    ver: '1.0',
    // The client app that asked for it, which every access token names (v2: azp) and an ID token does not.
    appid: CLIENT_ID,
    tid: HOME_TENANT,
    oid: '0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b4c',
    upn: 'crafted@contoso.test',
    scp: 'access_as_user',
    roles: ['LMS.Admin'],
    ...overrides,
  };
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export type ApiOptions = { token?: string; body?: unknown; headers?: Record<string, string> };

/** Calls the shared stack's API over real HTTP. `body` objects are sent as JSON; strings are sent as they are. */
export function api<T = any>(method: string, path: string, options: ApiOptions = {}): Promise<ApiResponse<T>> {
  return apiAt(stack.apiBaseUrl)<T>(method, path, options);
}

/** The API of a host of a test's own, called and checked as `api` calls and checks the shared one. */
export const apiAt =
  (baseUrl: string) =>
  <T = any>(method: string, path: string, options: ApiOptions = {}): Promise<ApiResponse<T>> =>
    callAndCheck<T>(baseUrl, method, path, options);

async function callAndCheck<T>(baseUrl: string, method: string, path: string, options: ApiOptions): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  if (response.headers.get('content-type')?.includes('application/json') && text) parsed = JSON.parse(text);
  const received = { status: response.status, headers: response.headers, body: parsed as T };
  await expectDocumented(method, path, received);
  return received;
}

let description: Promise<{ problems(method: string, path: string, response: ApiResponse): string[] }> | undefined;

/** Every response an API test receives must be one the OpenAPI document describes. */
async function expectDocumented(method: string, path: string, response: ApiResponse): Promise<void> {
  // Loaded on first use: the checker itself calls the API through this module.
  description ??= import('../openapi/description.js').then(({ ApiDescription }) => ApiDescription.served());
  const problems = (await description).problems(method, path, response);
  if (problems.length > 0) throw new Error(`The response does not match the OpenAPI document:\n${problems.join('\n')}`);
}

/** An owner address no other test uses, so a test can list exactly its own projects. */
export function uniqueEmail(label = 'owner'): string {
  return `${label}-${Math.random().toString(36).slice(2, 10)}@contoso.test`;
}

/** The path under /api of the next page a `Link` header points at, if there is one. */
export function nextPath(link: string | null): string | undefined {
  return link ? /<[^>]*\/api(\/[^>]+)>; rel="next"/.exec(link)?.[1] : undefined;
}

/**
 * The events of one type about one resource (`data.id`) made since a time, newest first, as
 * `GET /api/events` shows them to `token`, every page of them.
 */
export async function eventsAbout(token: string, type: string, id: string, since: string): Promise<{ id: string; type: string; data: { id: string } }[]> {
  const found: { id: string; type: string; data: { id: string } }[] = [];
  let path: string | undefined = `/events?type=${type}&since=${encodeURIComponent(since)}&limit=200`;
  while (path) {
    const page: ApiResponse<{ id: string; type: string; data: { id: string } }[]> = await api('GET', path, { token });
    if (page.status !== 200) throw new Error(`GET ${path} answered ${page.status}: ${JSON.stringify(page.body)}`);
    found.push(...page.body.filter((event) => event.data.id === id));
    path = nextPath(page.headers.get('link'));
  }
  return found;
}
