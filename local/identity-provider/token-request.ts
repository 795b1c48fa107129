/**
 * The token endpoint's form as Entra reads it: the client's credential (client_secret_post, client_secret_basic
 * or private_key_jwt), the scope parameter as the one resource it names, and the LOCAL DEVELOPMENT EXTENSION
 * fields. The grants that answer it are in grants.ts and on-behalf-of.ts.
 */
import { decodeJwt, decodeProtectedHeader, type JWTPayload, type JWTVerifyGetKey, type ProtectedHeaderParameters } from 'jose';
import { GUID } from '../defaults.js';
import { v2Issuer } from '../entra-token.js';
import type { TokenOptions } from './claims.js';
import { EntraError, entraTime, malformedRequest } from './entra-error.js';

const OPENID_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
// Allowed for the nbf of client assertions, whose clients' clocks may run ahead.
const CLIENT_ASSERTION_CLOCK_SKEW_SECONDS = 300;

export interface TokenEndpointContext {
  tenantId: string;
  /** The API's client id. */
  clientId: string;
  authorityHost: string;
  /** The provider's published keys, which verify the assertions On-Behalf-Of takes. */
  keys: JWTVerifyGetKey;
  issueToken(options: TokenOptions): Promise<string>;
}

export interface ClientCredentials {
  id: string;
  secret?: string;
  assertion?: { type: string | null; jwt: string };
}

export const tokenResponse = (scope: string, lifetime: number, accessToken: string) => ({
  token_type: 'Bearer',
  scope,
  expires_in: lifetime,
  ext_expires_in: lifetime,
  access_token: accessToken,
});

export function requiredParameter(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (!value) throw new EntraError(400, 'invalid_request', 900144, `The request body must contain the following parameter: '${name}'.`);
  return value;
}

export const apiAudiences = (clientId: string): string[] => [`api://${clientId}`, clientId];

/** Scopes of the one resource a token request may name, without the OpenID Connect scopes. */
export function requestedScopes(scopeParameter: string): { resource: string; names: string[] } {
  const scopes = scopeParameter.split(/\s+/).filter((scope) => scope && !OPENID_SCOPES.has(scope));
  const parsed = scopes.map((scope) => {
    const separator = scope.lastIndexOf('/');
    if (separator <= 0 || separator === scope.length - 1) throw invalidScope(scopeParameter);
    return { resource: scope.slice(0, separator), name: scope.slice(separator + 1) };
  });
  const resource = parsed[0]?.resource;
  if (resource === undefined) throw invalidScope(scopeParameter);
  if (parsed.some((scope) => scope.resource !== resource)) {
    const description = 'Provided value for the input parameter scope is not valid because it contains more than one resource.';
    throw new EntraError(400, 'invalid_scope', 28000, `${description} Scope ${scopeParameter} is not valid.`);
  }
  return { resource, names: parsed.map((scope) => scope.name) };
}

export function invalidScope(scopeParameter: string): EntraError {
  return new EntraError(
    400,
    'invalid_scope',
    70011,
    `The provided value for the input parameter 'scope' is not valid. The scope ${scopeParameter} is not valid.`,
  );
}

export function unknownResource(resource: string, tenantId: string): EntraError {
  const why = 'This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant.';
  return new EntraError(400, 'invalid_resource', 500011, `The resource principal named ${resource} was not found in the tenant named ${tenantId}. ${why}`);
}

/**
 * LOCAL DEVELOPMENT EXTENSION fields (Entra has none of them): `roles` (separated by spaces or commas),
 * `token_version` (1 or 2), `name`, `oid` and `expires_in` (seconds), the only one On-Behalf-Of applies.
 */
export function localExtension(form: URLSearchParams): Pick<TokenOptions, 'roles' | 'version' | 'name' | 'oid' | 'expiresInSeconds'> {
  const checked = (name: string, valid: RegExp, problem: string) => {
    const value = form.get(name)?.toLowerCase() || undefined;
    if (value !== undefined && !valid.test(value)) throw malformedRequest(`The '${name}' parameter must be ${problem}.`);
    return value;
  };
  const version = checked('token_version', /^[12]$/, '1 or 2');
  const expiresIn = checked('expires_in', /^[1-9]\d{0,7}$/, 'a positive number of seconds');
  return {
    roles: form
      .get('roles')
      ?.split(/[\s,]+/)
      .filter(Boolean),
    version: version ? (Number(version) as 1 | 2) : undefined,
    name: form.get('name') || undefined,
    oid: checked('oid', GUID, 'a GUID'),
    expiresInSeconds: expiresIn ? Number(expiresIn) : undefined,
  };
}

/** Client id and credential from the form (client_secret_post, private_key_jwt) or the Authorization header (client_secret_basic). */
export function clientCredentials(form: URLSearchParams, authorizationHeader: string | undefined): ClientCredentials {
  const basic = /^Basic\s+(.+)$/i.exec(authorizationHeader ?? '');
  const decoded = basic ? Buffer.from(basic[1]!, 'base64').toString('utf8') : '';
  const separator = decoded.indexOf(':');
  if (separator > 0) return { id: formDecode(decoded.slice(0, separator)), secret: formDecode(decoded.slice(separator + 1)) || undefined };
  const assertion = form.get('client_assertion');
  return {
    id: requiredParameter(form, 'client_id'),
    secret: form.get('client_secret') || undefined,
    ...(assertion ? { assertion: { type: form.get('client_assertion_type'), jwt: assertion } } : {}),
  };
}

/** RFC 6749 2.3.1 has clients form-urlencode both parts of Basic credentials; some send them raw. */
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return value;
  }
}

/** Checks a confidential client's credential: any non-empty secret, or a client assertion; returns appidacr (1 secret, 2 certificate). */
export function authenticateClient(client: ClientCredentials, context: TokenEndpointContext): '1' | '2' {
  if (client.secret) return '1';
  if (!client.assertion) {
    throw new EntraError(401, 'invalid_client', 7000218, "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.");
  }
  checkClientAssertion(client.id, client.assertion, context);
  return '2';
}

/** A certificate credential (RFC 7523) as Entra wants it, except the signature: no certificate is registered here. */
function checkClientAssertion(clientId: string, assertion: NonNullable<ClientCredentials['assertion']>, context: TokenEndpointContext): void {
  const invalidClient = (code: number, description: string) => new EntraError(401, 'invalid_client', code, description);
  const guide = 'Review the documentation at https://learn.microsoft.com/entra/identity-platform/certificate-credentials.';
  if (assertion.type !== CLIENT_ASSERTION_TYPE) throw malformedRequest(`The 'client_assertion_type' parameter must be '${CLIENT_ASSERTION_TYPE}'.`);
  let header: ProtectedHeaderParameters;
  let claims: JWTPayload;
  try {
    header = decodeProtectedHeader(assertion.jwt);
    claims = decodeJwt(assertion.jwt);
  } catch {
    throw invalidClient(50027, 'JWT token is invalid or malformed.');
  }
  const thumbprint = header.x5t ?? header['x5t#S256'];
  if ((header.alg !== 'RS256' && header.alg !== 'PS256') || typeof thumbprint !== 'string') {
    const reason = `[Reason - The key was not found., Thumbprint of key used by client: '${typeof thumbprint === 'string' ? thumbprint : ''}']`;
    throw invalidClient(700027, `Client assertion contains an invalid signature. ${reason}`);
  }
  if (claims.iss !== clientId || claims.sub !== clientId) {
    throw invalidClient(700021, `Client assertion application identifier doesn't match 'client_id' parameter. ${guide}`);
  }
  const base = `${context.authorityHost}/${context.tenantId}`;
  const audiences = [`${base}/oauth2/v2.0/token`, `${base}/oauth2/token`, v2Issuer(context.authorityHost, context.tenantId)];
  if (typeof claims.aud !== 'string' || !audiences.includes(claims.aud.toLowerCase())) {
    throw invalidClient(700023, `Client assertion audience claim does not match Realm issuer. ${guide}`);
  }
  const now = Math.floor(Date.now() / 1000);
  if (typeof claims.exp !== 'number' || claims.exp <= now || (claims.nbf ?? 0) > now + CLIENT_ASSERTION_CLOCK_SKEW_SECONDS) {
    const times = `Current time: ${entraTime(now * 1000)}, expiry time of assertion ${entraTime((claims.exp ?? 0) * 1000)}.`;
    throw invalidClient(700024, `Client assertion is not within its valid time range. ${times}`);
  }
}
