/**
 * Local stand-in for the one Microsoft Graph v1.0 call the API makes, over HTTP on loopback: `GET /v1.0/users`
 * with `$select`, `$top`, `$filter` (startswith on displayName, mail or userPrincipalName, joined with `or`) and
 * paging through an absolute `@odata.nextLink`, answering errors in Graph's shape. Other query options are
 * refused with a 400, so a caller relying on them finds out here rather than against the real Graph.
 *
 * It takes Graph tokens of the local identity provider (what its On-Behalf-Of grant issues) that carry one of
 * USERS_READ_PERMISSIONS, and shows each tenant (the token's `tid`) only its own directory.
 */
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage } from 'node:http';
import { createRemoteJWKSet, customFetch, type FetchImplementation, type JWTVerifyGetKey } from 'jose';
import { Agent, fetch } from 'undici';
import { close, keepIdleConnectionsOpen, listen, sendJson } from '../embedded-http.js';
import { checkEntraToken, TokenCheckFailed, type TokenProblem } from '../identity/entra-token.js';
import { GRAPH_APP_ID, GRAPH_RESOURCE, localUserObjectId } from '../identity/provider.js';

export interface GraphUser {
  id: string;
  displayName: string | null;
  userPrincipalName: string;
  mail: string | null;
  givenName?: string | null;
  surname?: string | null;
  jobTitle?: string | null;
  /** ISO 8601. Like Graph, returned only when `$select` names it. */
  createdDateTime?: string;
}

export type GraphStandIn = Awaited<ReturnType<typeof startGraphStandIn>>;

const DEFAULT_PAGE_SIZE = 100;
const MAX_PAGE_SIZE = 999;
/** Delegated or application permissions that allow listing users. */
const USERS_READ_PERMISSIONS = ['User.Read.All', 'User.ReadWrite.All', 'Directory.Read.All', 'Directory.ReadWrite.All'];
const GRAPH_AUDIENCES = [GRAPH_RESOURCE, `${GRAPH_RESOURCE}/`, GRAPH_APP_ID];
// Graph tolerates this much clock difference in token lifetimes.
const CLOCK_SKEW_SECONDS = 300;
const CONTENT_TYPE = 'application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false;charset=utf-8';
/** Graph's default properties of a user, in its order, returned when there is no `$select`. */
const DEFAULT_PROPERTIES = 'businessPhones displayName givenName jobTitle mail mobilePhone officeLocation preferredLanguage surname userPrincipalName id';
const SELECTABLE_PROPERTIES = [...DEFAULT_PROPERTIES.split(' '), 'createdDateTime'];
const FILTERABLE_PROPERTIES = ['displayName', 'mail', 'userPrincipalName'] as const;
const SUPPORTED_OPTIONS = ['$select', '$top', '$filter', '$skiptoken'];
// One clause: startswith(property,'prefix'), quotes inside the prefix doubled as OData spells them.
const STARTS_WITH = /startswith\(\s*(\w+)\s*,\s*'((?:[^']|'')*)'\s*\)/gi;
const FILTER = new RegExp(`^\\s*${STARTS_WITH.source}(\\s+or\\s+${STARTS_WITH.source})*\\s*$`, 'i');
const TOKEN_MESSAGES: Partial<Record<TokenProblem, string>> = {
  malformed: 'IDX14100: JWT is not well formed.',
  tenant: "Access token validation failure. The token has no valid 'tid' claim.",
  lifetime: 'Lifetime validation failed, the token is expired.',
  audience: 'Access token validation failure. Invalid audience.',
  issuer: 'Access token validation failure. Invalid issuer.',
};

class GraphError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const badRequest = (message: string) => new GraphError(400, 'Request_BadRequest', message);
const FAILURES = {
  400: () => new GraphError(400, 'BadRequest', 'Invalid filter clause: The query specified in the URI is not valid.', { 'Retry-After': '1' }),
  500: () => new GraphError(500, 'generalException', 'General exception while processing.'),
  503: () =>
    new GraphError(503, 'serviceNotAvailable', 'The service is temporarily unavailable. You may repeat the request after a delay.', { 'Retry-After': '1' }),
};

/**
 * Serves `users` (by tenant id; a tenant without an entry has an empty directory) to tokens of the identity
 * provider at `authorityHost`, whose keys it fetches trusting caCertPem (an IdentityProvider or the tests' stack info fits).
 */
export async function startGraphStandIn(options: { identityProvider: { authorityHost: string; caCertPem: string }; users?: Record<string, GraphUser[]> }) {
  const directories = new Map(Object.entries(options.users ?? {}).map(([tenantId, users]) => [tenantId.toLowerCase(), users]));
  const verify = tokenVerifier(options.identityProvider);
  let failure: 400 | 503 | 'drop' | undefined;
  let baseUrl = '';

  async function answer(request: IncomingMessage): Promise<Record<string, unknown>> {
    if (failure !== undefined && failure !== 'drop') throw FAILURES[failure]();
    const url = new URL(request.url ?? '/', baseUrl);
    if (url.pathname.toLowerCase().replace(/\/$/, '') !== '/v1.0/users') {
      throw new GraphError(400, 'BadRequest', `Resource not found for the segment '${url.pathname.split('/').filter(Boolean).pop() ?? ''}'.`);
    }
    if (request.method !== 'GET') {
      throw new GraphError(405, 'Request_BadRequest', 'Specified HTTP method is not allowed for the request target.', { Allow: 'GET' });
    }
    const caller = await verify(request.headers.authorization);
    if (!caller.permissions.some((permission) => USERS_READ_PERMISSIONS.includes(permission))) {
      throw new GraphError(403, 'Authorization_RequestDenied', 'Insufficient privileges to complete the operation.');
    }
    return listUsers(url, directories.get(caller.tenantId) ?? [], baseUrl);
  }

  const server = keepIdleConnectionsOpen(
    http.createServer((request, response) => {
      if (failure === 'drop') {
        request.socket.destroy();
        return;
      }
      const clientRequestId = request.headers['client-request-id'];
      const requestId = randomUUID();
      // Graph's correlation headers: its own request id, and the client's echoed (or the same one).
      const headers = { 'request-id': requestId, 'client-request-id': typeof clientRequestId === 'string' ? clientRequestId : requestId };
      const send = (status: number, body: unknown, more: Record<string, string> = {}) =>
        sendJson(response, status, body, { ...headers, ...more, 'Cache-Control': 'no-cache' }, CONTENT_TYPE);
      answer(request).then(
        (body) => send(200, body),
        (error: unknown) => {
          if (!(error instanceof GraphError)) console.error('graph stand-in: request failed', error);
          const { status, code, message, headers: errorHeaders } = error instanceof GraphError ? error : FAILURES[500]();
          const innerError = { date: new Date().toISOString().slice(0, 19), ...headers };
          send(status, { error: { code, message, innerError } }, errorHeaders);
        },
      );
    }),
  );
  baseUrl = `http://127.0.0.1:${await listen(server, 0, '127.0.0.1', 'Graph stand-in')}`;
  return {
    /** 'http://127.0.0.1:<port>': the value for GRAPH_BASE_URL. */
    baseUrl,
    /** From now on every request fails this way (until called with undefined); 'drop' closes the connection unanswered. */
    setFailure(next: typeof failure) {
      failure = next;
    },
    close: () => close(server),
  };
}

/** A directory user as the local identity provider knows them: same object id as in its tokens for that user name. */
export function directoryUser(tenantId: string, userPrincipalName: string, displayName: string, createdDateTime?: string): GraphUser {
  const [givenName, ...rest] = displayName.split(' ');
  return {
    id: localUserObjectId(tenantId, userPrincipalName),
    displayName,
    userPrincipalName,
    mail: userPrincipalName,
    givenName: givenName ?? null,
    surname: rest.length > 0 ? rest.join(' ') : null,
    jobTitle: null,
    ...(createdDateTime ? { createdDateTime } : {}),
  };
}

/** `count` users `user0001@contoso.test` ("User 0001"), `user0002@...`, created an hour apart: a directory for paging tests. */
export function generateDirectoryUsers(tenantId: string, count: number, { prefix = 'user', domain = 'contoso.test' } = {}): GraphUser[] {
  const label = prefix.charAt(0).toUpperCase() + prefix.slice(1);
  return Array.from({ length: count }, (_, index) => {
    const number = String(index + 1).padStart(4, '0');
    const created = new Date(Date.UTC(2024, 0, 1, index)).toISOString().replace(/\.\d+Z$/, 'Z');
    return directoryUser(tenantId, `${prefix}${number}@${domain}`, `${label} ${number}`, created);
  });
}

function listUsers(url: URL, directory: GraphUser[], baseUrl: string): Record<string, unknown> {
  const query = url.searchParams;
  const unsupported = [...query.keys()].find((name) => name.startsWith('$') && !SUPPORTED_OPTIONS.includes(name));
  if (unsupported) {
    const message = `The query option '${unsupported}' is not supported by the local Graph stand-in (supported here: ${SUPPORTED_OPTIONS.join(', ')}).`;
    throw new GraphError(400, 'Request_UnsupportedQuery', message);
  }
  const select = query.get('$select')?.split(',').map(selectable);
  const top = query.get('$top') ?? String(DEFAULT_PAGE_SIZE);
  if (!/^\d{1,6}$/.test(top) || Number(top) < 1 || Number(top) > MAX_PAGE_SIZE) {
    throw badRequest(`Invalid page size specified: '${top}'. Must be between 1 and ${MAX_PAGE_SIZE} inclusive.`);
  }
  const filter = query.get('$filter');
  const clauses = filter === null ? undefined : startsWithClauses(filter);
  const offset = skipTokenOffset(query.get('$skiptoken'));

  const matching = clauses ? directory.filter((user) => clauses.some(({ property, prefix }) => user[property]?.toLowerCase().startsWith(prefix))) : directory;
  const page = matching.slice(offset, offset + Number(top));
  const properties = select ?? DEFAULT_PROPERTIES.split(' ');
  // The same request from the next offset; like Graph's, it keeps the other query options.
  const nextOptions = [...query].filter(([name]) => name !== '$skiptoken');
  nextOptions.push(['$skiptoken', Buffer.from(JSON.stringify({ offset: offset + page.length })).toString('base64url')]);
  const nextLink = `${baseUrl}${url.pathname}?${nextOptions.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&')}`;
  return {
    '@odata.context': `${baseUrl}/v1.0/$metadata#users${select ? `(${select.join(',')})` : ''}`,
    value: page.map((user) => Object.fromEntries(properties.map((name) => [name, user[name as keyof GraphUser] ?? (name === 'businessPhones' ? [] : null)]))),
    ...(offset + page.length < matching.length ? { '@odata.nextLink': nextLink } : {}),
  };
}

function selectable(name: string): string {
  const property = SELECTABLE_PROPERTIES.find((candidate) => candidate.toLowerCase() === name.trim().toLowerCase());
  if (!property) throw badRequest(`Could not find a property named '${name.trim()}' on type 'microsoft.graph.user'.`);
  return property;
}

/** The startswith clauses of a filter; directory string comparisons are case-insensitive, so the prefixes are in lower case. */
function startsWithClauses(filter: string): { property: (typeof FILTERABLE_PROPERTIES)[number]; prefix: string }[] {
  if (!FILTER.test(filter)) {
    const supported = `startswith(${FILTERABLE_PROPERTIES.join('|')},'value') clauses joined with 'or'`;
    throw badRequest(`Invalid filter clause: '${filter}'. The local Graph stand-in supports ${supported}.`);
  }
  return [...filter.matchAll(STARTS_WITH)].map(([, name = '', prefix = '']) => {
    const property = FILTERABLE_PROPERTIES.find((candidate) => candidate.toLowerCase() === name.toLowerCase());
    if (!property) {
      throw new GraphError(400, 'Request_UnsupportedQuery', `Unsupported or invalid query filter clause specified for property '${name}' of resource 'User'.`);
    }
    return { property, prefix: prefix.replace(/''/g, "'").toLowerCase() };
  });
}

function skipTokenOffset(skipToken: string | null): number {
  if (skipToken === null) return 0;
  try {
    const { offset } = JSON.parse(Buffer.from(skipToken, 'base64url').toString('utf8')) as { offset?: unknown };
    if (typeof offset === 'number' && Number.isSafeInteger(offset) && offset >= 0) return offset;
  } catch {
    // Refused below, as any other token that is not one of ours.
  }
  throw badRequest(`Invalid $skiptoken value: '${skipToken}'.`);
}

/** Checks a bearer token as Graph does; answers its tenant and permissions (delegated scopes, or an app-only token's roles). */
function tokenVerifier(identityProvider: { authorityHost: string; caCertPem: string }) {
  // Signing keys are the same for every tenant, but Entra publishes them per tenant.
  const keySets = new Map<string, JWTVerifyGetKey>();
  // undici's fetch, as the global one cannot be given the provider's self-signed certificate to trust.
  // jose's headers are copied as pairs: their type (Node's globals) is not undici 7's own.
  const dispatcher = new Agent({ connect: { ca: identityProvider.caCertPem } });
  const fetchTrusting: FetchImplementation = (url, init) => fetch(url, { ...init, headers: [...init.headers], dispatcher });
  const keys = (tenantId: string): JWTVerifyGetKey => {
    const url = new URL(`${identityProvider.authorityHost}/${tenantId}/discovery/keys`);
    if (!keySets.has(tenantId)) keySets.set(tenantId, createRemoteJWKSet(url, { [customFetch]: fetchTrusting }));
    return keySets.get(tenantId)!;
  };
  const invalidToken = (message: string) =>
    new GraphError(401, 'InvalidAuthenticationToken', message, {
      'WWW-Authenticate': `Bearer realm="", authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize", client_id="${GRAPH_APP_ID}"`,
    });

  return async (authorization: string | undefined): Promise<{ tenantId: string; permissions: string[] }> => {
    const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    if (!token) throw invalidToken('Access token is empty.');
    const expected = { keys, authorityHost: identityProvider.authorityHost, audiences: GRAPH_AUDIENCES, clockToleranceSeconds: CLOCK_SKEW_SECONDS };
    const { claims, tenantId } = await checkEntraToken(token, expected).catch((error: unknown) => {
      if (!(error instanceof TokenCheckFailed)) throw error;
      throw invalidToken(TOKEN_MESSAGES[error.problem] ?? 'Access token validation failure.');
    });
    const roles = Array.isArray(claims.roles) ? claims.roles.map(String) : [];
    return { tenantId, permissions: typeof claims.scp === 'string' ? claims.scp.split(' ') : roles };
  };
}
