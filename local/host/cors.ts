/** CORS as the Functions host applies it in front of the functions, deciding as ASP.NET Core's CORS middleware does (docs/local-stack.md). */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface CorsPolicy {
  /** Exact origins (`scheme://host[:port]`, lower case), or `*` for any. */
  origins: readonly string[] | '*';
  /** Cookies and client certificates may come along (`Access-Control-Allow-Credentials: true`). */
  supportCredentials: boolean;
}

/** What the contract lets a page send. Azure's host allows any method and header; locally the contract's list shows a page that needs more at once. */
const PREFLIGHT_HEADERS = {
  'Access-Control-Allow-Methods': 'GET, POST, PUT, DELETE',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, Accept-Language',
  // Short, so that a changed setting soon counts.
  'Access-Control-Max-Age': '600',
};

/** The Function App's CORS setting as Azure's platform hands it to the host (origins comma-separated or a JSON array); none: no CORS, as `func start`. */
export function corsPolicyFrom(environment: NodeJS.ProcessEnv): CorsPolicy | undefined {
  const listed = environment.CORS_ALLOWED_ORIGINS?.trim() ?? '';
  const entries = (listed.startsWith('[') ? (JSON.parse(listed) as string[]) : listed.split(',')).map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) return undefined;
  const supportCredentials = environment.CORS_SUPPORT_CREDENTIALS?.trim().toLowerCase() === 'true';
  if (!entries.includes('*')) return { origins: entries.map(origin), supportCredentials };
  if (entries.length > 1) throw new Error(`CORS_ALLOWED_ORIGINS: "*" allows every origin and cannot be listed with others ("${listed}")`);
  // ASP.NET Core refuses this policy too: a page of any origin could act with the user's credentials.
  if (supportCredentials)
    throw new Error('CORS: "*" cannot be combined with credentials (CORSCredentials, CORS_SUPPORT_CREDENTIALS): list the origins instead');
  return { origins: '*', supportCredentials };
}

/** "https://addin.contoso.com/" is taken as the origin it names; a longer path is a mistake. */
function origin(entry: string): string {
  const url = URL.canParse(entry) ? new URL(entry) : undefined;
  if (!url || !/^https?:$/.test(url.protocol) || url.pathname !== '/' || url.search || url.hash || url.username) {
    throw new Error(`CORS: "${entry}" is not an origin such as https://addin.contoso.com (scheme, host and port only)`);
  }
  return url.origin;
}

/** `local.settings.json`'s `Host.CORS` and `Host.CORSCredentials`, which `func start` reads, as the settings the host gets in Azure. */
export function corsSettingsFromLocalSettings(host: Record<string, unknown> | undefined): Record<string, string> {
  const settings: Record<string, string> = {};
  if (typeof host?.CORS === 'string' && host.CORS.trim()) settings.CORS_ALLOWED_ORIGINS = host.CORS;
  const credentials = host?.CORSCredentials;
  if (typeof credentials === 'boolean' || typeof credentials === 'string') settings.CORS_SUPPORT_CREDENTIALS = String(credentials);
  return settings;
}

/** Applies the policy before any function sees the request: true when it answered it (a preflight); otherwise its response has the CORS headers already. */
export function handledByCors(policy: CorsPolicy | undefined, request: IncomingMessage, response: ServerResponse): boolean {
  const requestOrigin = request.headers.origin;
  if (!policy || requestOrigin === undefined) return false;
  const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
  const allowed = policy.origins === '*' ? '*' : policy.origins.includes(requestOrigin) ? requestOrigin : undefined;
  if (allowed) {
    response.setHeader('Access-Control-Allow-Origin', allowed);
    if (policy.supportCredentials) response.setHeader('Access-Control-Allow-Credentials', 'true');
    // The answer depends on who asks: a cache must not hand one origin's answer to another.
    if (allowed !== '*') response.setHeader('Vary', 'Origin');
    if (preflight) response.setHeaders(new Map(Object.entries(PREFLIGHT_HEADERS)));
  }
  if (preflight) response.writeHead(204).end();
  return preflight;
}
