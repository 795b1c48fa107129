/**
 * CORS as the Functions host applies it in front of the functions: in Azure, ASP.NET Core's CORS
 * middleware with the Function App's CORS setting (the platform hands it to the host as
 * CORS_ALLOWED_ORIGINS and CORS_SUPPORT_CREDENTIALS); locally, `func start` with `Host.CORS` and
 * `Host.CORSCredentials` from local.settings.json. The decisions are that middleware's:
 *
 * - a request without `Origin` is none of its business;
 * - a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered 204 here and
 *   never reaches a function, so it needs no token; an origin that is not allowed gets the 204
 *   without any CORS header, which the browser takes as a refusal;
 * - any other request goes on to the functions, and the answer gets `Access-Control-Allow-Origin`
 *   (and `Access-Control-Allow-Credentials`) when the origin is allowed, nothing otherwise.
 *
 * Which response headers a page may read (`Access-Control-Expose-Headers`) is not the host's: Azure's
 * CORS setting has no place for them, so the app names them on every answer (shared/http/responses.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface CorsPolicy {
  /** Exact origins (`scheme://host[:port]`, lower case), or `*` for any. */
  origins: readonly string[] | '*';
  /** Cookies and client certificates may come along (`Access-Control-Allow-Credentials: true`). */
  supportCredentials: boolean;
}

/** What the contract lets a page send. Azure's host allows any method and header; locally the contract's list shows a page that needs more at once. */
const ALLOWED_METHODS = 'GET, POST, PUT, DELETE';
const ALLOWED_REQUEST_HEADERS = 'Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, Accept-Language';
/** How long a browser may reuse a preflight's answer: short, so that a changed setting soon counts. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * The policy the host runs with, from its environment: CORS_ALLOWED_ORIGINS, comma-separated (or a
 * JSON array, the form in which Azure's platform hands the setting to the host), and
 * CORS_SUPPORT_CREDENTIALS. No origins: no CORS at all, as `func start` without `--cors`.
 */
export function corsPolicyFrom(environment: NodeJS.ProcessEnv): CorsPolicy | undefined {
  const listed = environment.CORS_ALLOWED_ORIGINS?.trim() ?? '';
  const entries = (listed.startsWith('[') ? (JSON.parse(listed) as string[]) : listed.split(',')).map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) return undefined;
  const supportCredentials = environment.CORS_SUPPORT_CREDENTIALS?.trim().toLowerCase() === 'true';
  if (!entries.includes('*')) return { origins: entries.map(origin), supportCredentials };
  if (entries.length > 1) throw new Error(`CORS_ALLOWED_ORIGINS: "*" allows every origin and cannot be listed with others ("${listed}")`);
  if (supportCredentials) {
    // ASP.NET Core refuses this policy too: a page of any origin could act with the user's credentials.
    throw new Error('CORS: "*" cannot be combined with credentials (CORSCredentials, CORS_SUPPORT_CREDENTIALS): list the origins instead');
  }
  return { origins: '*', supportCredentials };
}

function origin(entry: string): string {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    throw new Error(`CORS: "${entry}" is not an origin such as https://addin.contoso.com`);
  }
  // An origin has no path: "https://addin.contoso.com/" is taken as the origin it names, a longer path is a mistake.
  if (!/^https?:$/.test(url.protocol) || url.pathname !== '/' || url.search || url.hash || url.username) {
    throw new Error(`CORS: "${entry}" is not an origin such as https://addin.contoso.com (scheme, host and port only)`);
  }
  return url.origin;
}

/**
 * `local.settings.json`'s `Host.CORS` and `Host.CORSCredentials`, which `func start` reads, as the
 * settings the host gets in Azure.
 */
export function corsSettingsFromLocalSettings(host: Record<string, unknown> | undefined): Record<string, string> {
  const settings: Record<string, string> = {};
  if (typeof host?.CORS === 'string' && host.CORS.trim()) settings.CORS_ALLOWED_ORIGINS = host.CORS;
  const credentials = host?.CORSCredentials;
  if (typeof credentials === 'boolean' || typeof credentials === 'string') settings.CORS_SUPPORT_CREDENTIALS = String(credentials);
  return settings;
}

function allowedOrigin(policy: CorsPolicy, requestOrigin: string): string | undefined {
  if (policy.origins === '*') return '*';
  return policy.origins.includes(requestOrigin) ? requestOrigin : undefined;
}

/**
 * Applies the policy to a request before any function sees it. True when it answered the request
 * (a preflight); otherwise the request goes on, with the CORS headers already set on its response.
 */
export function handledByCors(policy: CorsPolicy | undefined, request: IncomingMessage, response: ServerResponse): boolean {
  const requestOrigin = request.headers.origin;
  if (!policy || requestOrigin === undefined) return false;
  const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
  const allowed = allowedOrigin(policy, requestOrigin);
  if (allowed) {
    response.setHeader('Access-Control-Allow-Origin', allowed);
    if (policy.supportCredentials) response.setHeader('Access-Control-Allow-Credentials', 'true');
    // The answer depends on who asks: a cache must not hand one origin's answer to another.
    if (allowed !== '*') response.setHeader('Vary', 'Origin');
    if (preflight) {
      response.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
      response.setHeader('Access-Control-Allow-Headers', ALLOWED_REQUEST_HEADERS);
      response.setHeader('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS));
    }
  }
  if (preflight) response.writeHead(204).end();
  return preflight;
}
