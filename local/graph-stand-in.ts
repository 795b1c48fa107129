/**
 * Local stand-in for the part of Microsoft Graph the API calls: the directory's users.
 *
 * It speaks Graph v1.0's protocol over plain HTTP on loopback: `GET /v1.0/users` with `$select`, `$top`,
 * `$filter` (startswith on displayName, mail or userPrincipalName, joined with `or`) and paging through an
 * absolute `@odata.nextLink` with a `$skiptoken`, the one Graph call the API makes. Errors have Graph's shape
 * `{ error: { code, message, innerError: { date, request-id, client-request-id } } }`.
 *
 * Requests need a bearer token for Graph from the local identity provider (what its On-Behalf-Of grant issues):
 * signed with its key, audience https://graph.microsoft.com or Graph's app id, issued for the token's tenant,
 * and, for /users, one of the permissions in USERS_READ_PERMISSIONS. Each tenant (the token's `tid`) sees only
 * its own directory. Other query options (`$orderby`, `$count`, `$search`, ...) are refused with a 400, so a
 * caller relying on them finds out here rather than against the real Graph.
 */
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { buffer } from 'node:stream/consumers';
import { createRemoteJWKSet, customFetch, type FetchImplementation, type JWTVerifyGetKey } from 'jose';
import { close, listen, sendJson } from './embedded-http.js';
import { checkEntraToken, TokenCheckFailed } from './entra-token.js';
import { GRAPH_APP_ID, GRAPH_RESOURCE, localUserObjectId } from './identity-provider.js';
import { keepIdleConnectionsOpen } from './idle-connections.js';

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

/** A status Graph answers with its error body, or 'drop': the connection is closed without an answer. */
export type GraphFailure = 400 | 429 | 500 | 503 | 'drop';

export interface GraphStandInOptions {
  /** 0 picks a free port. Default 0. */
  port?: number;
  /** Listen address. Default '127.0.0.1'. */
  host?: string;
  /**
   * Whose tokens are accepted: the local identity provider, whose keys are fetched from it over HTTPS trusting
   * caCertPem (an IdentityProvider or the tests' stack info fits).
   */
  identityProvider: { authorityHost: string; caCertPem: string };
  /** Directory users by tenant id; a tenant without an entry has an empty directory. */
  users?: Record<string, GraphUser[]>;
}

export interface GraphStandIn {
  /** 'http://127.0.0.1:<port>': the value for GRAPH_BASE_URL (requests go to `${baseUrl}/v1.0/...`). */
  baseUrl: string;
  port: number;
  /** Requests received, in all and per endpoint, rejected ones included. */
  counts: { requests: number; users: number };
  /** From now on every request fails this way (until called with undefined), to test Graph being unavailable. */
  setFailure(failure: GraphFailure | undefined): void;
  close(): Promise<void>;
}

export const GRAPH_DEFAULT_PAGE_SIZE = 100;
export const GRAPH_MAX_PAGE_SIZE = 999;
/** Delegated or application permissions that allow listing users. */
export const USERS_READ_PERMISSIONS = ['User.Read.All', 'User.ReadWrite.All', 'Directory.Read.All', 'Directory.ReadWrite.All'];
const GRAPH_CONTENT_TYPE = 'application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false;charset=utf-8';
const GRAPH_AUDIENCES = [GRAPH_RESOURCE, `${GRAPH_RESOURCE}/`, GRAPH_APP_ID];
// Graph tolerates this much clock difference in token lifetimes.
const CLOCK_SKEW_SECONDS = 300;

/** Graph's default properties of a user, in its order, returned when there is no `$select`. */
const DEFAULT_PROPERTIES = [
  'businessPhones',
  'displayName',
  'givenName',
  'jobTitle',
  'mail',
  'mobilePhone',
  'officeLocation',
  'preferredLanguage',
  'surname',
  'userPrincipalName',
  'id',
];
const SELECTABLE_PROPERTIES = [...DEFAULT_PROPERTIES, 'createdDateTime'];
const FILTERABLE_PROPERTIES = ['displayName', 'mail', 'userPrincipalName'] as const;
type FilterableProperty = (typeof FILTERABLE_PROPERTIES)[number];

const FAILURES: Record<Exclude<GraphFailure, 'drop'>, { code: string; message: string }> = {
  400: { code: 'BadRequest', message: 'Invalid filter clause: The query specified in the URI is not valid.' },
  429: { code: 'TooManyRequests', message: 'Too many requests.' },
  500: { code: 'generalException', message: 'General exception while processing.' },
  503: {
    code: 'serviceNotAvailable',
    message:
      'The service is temporarily unavailable for maintenance or is overloaded. You may repeat the request after a ' +
      'delay, which may be specified in a Retry-After header.',
  },
};

export async function startGraphStandIn(options: GraphStandInOptions): Promise<GraphStandIn> {
  const host = options.host ?? '127.0.0.1';
  const directories = new Map(Object.entries(options.users ?? {}).map(([tenantId, users]) => [tenantId.toLowerCase(), users]));
  const verifier = tokenVerifier(options.identityProvider);
  const counts = { requests: 0, users: 0 };
  let failure: GraphFailure | undefined;
  let baseUrl = '';

  const server = keepIdleConnectionsOpen(
    http.createServer((request, response) => {
      handleRequest(request, response).catch((error: unknown) => {
        console.error('graph stand-in: request failed', error);
        if (!response.headersSent) sendGraphError(response, new GraphError(500, FAILURES[500].code, FAILURES[500].message), request);
      });
    }),
  );

  async function handleRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    counts.requests += 1;
    if (failure === 'drop') {
      request.socket.destroy();
      return;
    }
    try {
      if (failure !== undefined) {
        throw new GraphError(failure, FAILURES[failure].code, FAILURES[failure].message, { 'Retry-After': '1' });
      }
      const url = new URL(request.url ?? '/', baseUrl);
      if (url.pathname.toLowerCase().replace(/\/$/, '') !== '/v1.0/users') {
        const segment = url.pathname.split('/').filter(Boolean).pop() ?? '';
        throw new GraphError(400, 'BadRequest', `Resource not found for the segment '${segment}'.`);
      }
      counts.users += 1;
      if (request.method !== 'GET') {
        throw new GraphError(405, 'Request_BadRequest', 'Specified HTTP method is not allowed for the request target.', { Allow: 'GET' });
      }
      const caller = await verifier.verify(request.headers.authorization);
      const directory = directories.get(caller.tenantId) ?? [];
      sendGraphJson(response, 200, listUsers(url, caller, directory, baseUrl), graphHeaders(request));
    } catch (error) {
      if (!(error instanceof GraphError)) throw error;
      sendGraphError(response, error, request);
    }
  }

  const port = await listen(server, options.port ?? 0, host, 'Graph stand-in');
  baseUrl = `http://${host}:${port}`;

  return {
    baseUrl,
    port,
    counts,
    setFailure(next) {
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
export function generateDirectoryUsers(tenantId: string, count: number, options: { prefix?: string; domain?: string } = {}): GraphUser[] {
  const prefix = options.prefix ?? 'user';
  const domain = options.domain ?? 'contoso.test';
  const label = prefix.charAt(0).toUpperCase() + prefix.slice(1);
  const firstCreated = Date.parse('2024-01-01T00:00:00Z');
  return Array.from({ length: count }, (_, index) => {
    const number = String(index + 1).padStart(4, '0');
    const created = new Date(firstCreated + index * 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    return directoryUser(tenantId, `${prefix}${number}@${domain}`, `${label} ${number}`, created);
  });
}

// ---------------------------------------------------------------- endpoints

interface Caller {
  tenantId: string;
  /** Delegated scopes (scp), or application roles of an app-only token. */
  permissions: string[];
}

function listUsers(url: URL, caller: Caller, directory: GraphUser[], baseUrl: string): Record<string, unknown> {
  requirePermission(caller, USERS_READ_PERMISSIONS);
  const query = url.searchParams;
  rejectUnsupportedOptions(query, ['$select', '$top', '$filter', '$skiptoken']);
  const select = selectedProperties(query.get('$select'));
  const top = pageSize(query.get('$top'));
  const filter = query.has('$filter') ? parseFilter(query.get('$filter')!) : [];
  const offset = query.has('$skiptoken') ? skipTokenOffset(query.get('$skiptoken')!) : 0;

  const matching = filter.length === 0 ? directory : directory.filter((user) => filter.some((clause) => startsWith(user, clause)));
  const page = matching.slice(offset, offset + top);
  const nextOffset = offset + page.length;
  return {
    '@odata.context': `${baseUrl}/v1.0/$metadata#users${select ? `(${select.join(',')})` : ''}`,
    value: page.map((user) => project(user, select)),
    ...(nextOffset < matching.length ? { '@odata.nextLink': nextLink(url, baseUrl, nextOffset) } : {}),
  };
}

function requirePermission(caller: Caller, accepted: string[]): void {
  if (!caller.permissions.some((permission) => accepted.includes(permission))) {
    throw new GraphError(403, 'Authorization_RequestDenied', 'Insufficient privileges to complete the operation.');
  }
}

// ---------------------------------------------------------------- OData query options

function rejectUnsupportedOptions(query: URLSearchParams, supported: string[]): void {
  for (const name of query.keys()) {
    if (name.startsWith('$') && !supported.includes(name)) {
      throw new GraphError(
        400,
        'Request_UnsupportedQuery',
        `The query option '${name}' is not supported by the local Graph stand-in (supported here: ${supported.join(', ')}).`,
      );
    }
  }
}

function selectedProperties(select: string | null): string[] | undefined {
  if (select === null) return undefined;
  return select.split(',').map((name) => {
    const property = SELECTABLE_PROPERTIES.find((candidate) => candidate.toLowerCase() === name.trim().toLowerCase());
    if (!property) {
      throw new GraphError(400, 'Request_BadRequest', `Could not find a property named '${name.trim()}' on type 'microsoft.graph.user'.`);
    }
    return property;
  });
}

function pageSize(top: string | null): number {
  if (top === null) return GRAPH_DEFAULT_PAGE_SIZE;
  const size = /^\d{1,6}$/.test(top) ? Number(top) : NaN;
  if (!(size >= 1 && size <= GRAPH_MAX_PAGE_SIZE)) {
    throw new GraphError(400, 'Request_BadRequest', `Invalid page size specified: '${top}'. Must be between 1 and ${GRAPH_MAX_PAGE_SIZE} inclusive.`);
  }
  return size;
}

interface StartsWithClause {
  property: FilterableProperty;
  prefix: string;
}

/** `startswith(property,'prefix')` clauses joined with `or`; quotes inside values are doubled, as OData spells them. */
function parseFilter(filter: string): StartsWithClause[] {
  const invalid = () =>
    new GraphError(
      400,
      'Request_BadRequest',
      `Invalid filter clause: '${filter}'. The local Graph stand-in supports startswith(${FILTERABLE_PROPERTIES.join('|')},'value') clauses joined with 'or'.`,
    );
  const clauses: StartsWithClause[] = [];
  let rest = filter.trim();
  for (;;) {
    const clause = /^startswith\(\s*(\w+)\s*,\s*'((?:[^']|'')*)'\s*\)/i.exec(rest);
    if (!clause) throw invalid();
    const property = FILTERABLE_PROPERTIES.find((candidate) => candidate.toLowerCase() === clause[1]!.toLowerCase());
    if (!property) {
      throw new GraphError(
        400,
        'Request_UnsupportedQuery',
        `Unsupported or invalid query filter clause specified for property '${clause[1]}' of resource 'User'.`,
      );
    }
    clauses.push({ property, prefix: clause[2]!.replace(/''/g, "'") });
    rest = rest.slice(clause[0].length).trimStart();
    if (rest === '') return clauses;
    const or = /^or\s+/i.exec(rest);
    if (!or) throw invalid();
    rest = rest.slice(or[0].length);
  }
}

/** Directory string comparisons are case-insensitive. */
function startsWith(user: GraphUser, clause: StartsWithClause): boolean {
  const value = user[clause.property];
  return typeof value === 'string' && value.toLowerCase().startsWith(clause.prefix.toLowerCase());
}

function project(user: GraphUser, select: string[] | undefined): Record<string, unknown> {
  const values: Record<string, unknown> = { ...user };
  return Object.fromEntries((select ?? DEFAULT_PROPERTIES).map((property) => [property, values[property] ?? (property === 'businessPhones' ? [] : null)]));
}

/** The same request from the next offset; like Graph's, it keeps the other query options. */
function nextLink(url: URL, baseUrl: string, offset: number): string {
  const options = [...url.searchParams].filter(([name]) => name !== '$skiptoken');
  options.push(['$skiptoken', Buffer.from(JSON.stringify({ offset })).toString('base64url')]);
  return `${baseUrl}${url.pathname}?${options.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&')}`;
}

function skipTokenOffset(skipToken: string): number {
  try {
    const { offset } = JSON.parse(Buffer.from(skipToken, 'base64url').toString('utf8')) as { offset?: unknown };
    if (Number.isSafeInteger(offset) && (offset as number) >= 0) return offset as number;
  } catch {
    // Reported below, like any other token that is not one of ours.
  }
  throw new GraphError(400, 'Request_BadRequest', `Invalid $skiptoken value: '${skipToken}'.`);
}

// ---------------------------------------------------------------- tokens

function tokenVerifier(identityProvider: GraphStandInOptions['identityProvider']) {
  const keySets = new Map<string, JWTVerifyGetKey>();

  // Signing keys are the same for every tenant, but Entra publishes them per tenant.
  function keysFor(tenantId: string): JWTVerifyGetKey {
    let keys = keySets.get(tenantId);
    if (!keys) {
      const url = new URL(`${identityProvider.authorityHost}/${tenantId}/discovery/keys`);
      keys = createRemoteJWKSet(url, { [customFetch]: fetchTrusting(identityProvider.caCertPem) });
      keySets.set(tenantId, keys);
    }
    return keys;
  }

  const MESSAGES: Record<string, string> = {
    malformed: 'IDX14100: JWT is not well formed.',
    tenant: "Access token validation failure. The token has no valid 'tid' claim.",
    lifetime: 'Lifetime validation failed, the token is expired.',
    audience: 'Access token validation failure. Invalid audience.',
    issuer: 'Access token validation failure. Invalid issuer.',
  };

  async function verify(authorization: string | undefined): Promise<Caller> {
    const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    if (!token) throw invalidToken('Access token is empty.');
    try {
      const { claims, tenantId } = await checkEntraToken(token, {
        keys: keysFor,
        authorityHost: identityProvider.authorityHost,
        audiences: GRAPH_AUDIENCES,
        clockToleranceSeconds: CLOCK_SKEW_SECONDS,
      });
      const roles = Array.isArray(claims.roles) ? claims.roles.map(String) : [];
      return { tenantId, permissions: typeof claims.scp === 'string' ? claims.scp.split(' ') : roles };
    } catch (error) {
      if (!(error instanceof TokenCheckFailed)) throw error;
      throw invalidToken(MESSAGES[error.problem] ?? 'Access token validation failure.');
    }
  }

  return { verify };
}

/** jose's fetch for the provider's keys, trusting its self-signed certificate without touching the process's trust. */
function fetchTrusting(caCertPem: string): FetchImplementation {
  return (url, options) =>
    new Promise((resolve, reject) => {
      const request = https.get(url, { ca: caCertPem, signal: options.signal, headers: Object.fromEntries(options.headers) }, (response) => {
        buffer(response).then((body) => resolve(new Response(body, { status: response.statusCode ?? 502 })), reject);
      });
      request.on('error', reject);
    });
}

function invalidToken(message: string): GraphError {
  return new GraphError(401, 'InvalidAuthenticationToken', message, {
    'WWW-Authenticate': `Bearer realm="", authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize", client_id="${GRAPH_APP_ID}"`,
  });
}

// ---------------------------------------------------------------- HTTP plumbing

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

/** Graph's correlation headers: its own request id, and the client's id echoed (or the same one). */
function graphHeaders(request: IncomingMessage): Record<string, string> {
  const requestId = randomUUID();
  const clientRequestId = request.headers['client-request-id'];
  return { 'request-id': requestId, 'client-request-id': typeof clientRequestId === 'string' ? clientRequestId : requestId };
}

function sendGraphError(response: ServerResponse, error: GraphError, request: IncomingMessage): void {
  const headers = graphHeaders(request);
  sendGraphJson(
    response,
    error.status,
    {
      error: {
        code: error.code,
        message: error.message,
        innerError: {
          date: new Date().toISOString().slice(0, 19),
          'request-id': headers['request-id'],
          'client-request-id': headers['client-request-id'],
        },
      },
    },
    { ...headers, ...error.headers },
  );
}

function sendGraphJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  sendJson(response, status, body, { ...headers, 'Cache-Control': 'no-cache' }, GRAPH_CONTENT_TYPE);
}
