/**
 * The token endpoint's form, as Entra reads it: the client's credentials (client_secret_post,
 * client_secret_basic or private_key_jwt), the LOCAL DEVELOPMENT EXTENSION fields (roles,
 * token_version, name, oid, expires_in) and the scope parameter as the one resource it names. The
 * grants that answer it are in grants.ts and on-behalf-of.ts.
 */
import { decodeJwt, decodeProtectedHeader, type JWTPayload, type JWTVerifyGetKey, type ProtectedHeaderParameters } from 'jose';
import { GUID } from '../defaults.js';
import { v2Issuer } from '../entra-token.js';
import type { TokenOptions } from './claims.js';
import { EntraError, entraTime, malformedRequest } from './entra-error.js';
import type { Signer } from './signing.js';

const OPENID_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
// Allowed for the nbf of client assertions, whose clients' clocks may run ahead.
const CLIENT_ASSERTION_CLOCK_SKEW_SECONDS = 300;

export interface TokenEndpointContext {
  tenantId: string;
  /** The API's client id. */
  clientId: string;
  authorityHost: string;
  signer: Signer;
  /** The provider's published keys, which verify the assertions On-Behalf-Of takes. */
  keys: JWTVerifyGetKey;
  issueToken(options: TokenOptions): Promise<string>;
}

export interface TokenResponse {
  token_type: 'Bearer';
  scope: string;
  expires_in: number;
  ext_expires_in: number;
  access_token: string;
  id_token?: string;
  client_info?: string;
}

export interface ClientCredentials {
  id: string;
  secret?: string;
  assertion?: { type: string | null; jwt: string };
}

export function requiredParameter(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (!value) throw new EntraError(400, 'invalid_request', 900144, `The request body must contain the following parameter: '${name}'.`);
  return value;
}

/** Entra puts the resource as requested (app ID URI or client id) in the aud of v1 tokens; v2 always has the client id. */
export function audienceFor(resource: string, version: 1 | 2 | undefined): string | undefined {
  return (version ?? 1) === 1 ? resource : undefined;
}

export const apiAudiences = (clientId: string): string[] => [`api://${clientId}`, clientId];

export function requestedApiScopes(scopeParameter: string, context: TokenEndpointContext): { resource: string; names: string[] } {
  const requested = requestedScopes(scopeParameter);
  if (!apiAudiences(context.clientId).includes(requested.resource.toLowerCase())) throw unknownResource(requested.resource, context.tenantId);
  return requested;
}

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
    throw new EntraError(
      400,
      'invalid_scope',
      28000,
      `Provided value for the input parameter scope is not valid because it contains more than one resource. Scope ${scopeParameter} is not valid.`,
    );
  }
  return { resource, names: parsed.map((scope) => scope.name) };
}

export function invalidScope(scopeParameter: string): EntraError {
  return new EntraError(
    400,
    'invalid_scope',
    70011,
    `The provided request must include a 'scope' input parameter. The provided value for the input parameter ` +
      `'scope' is not valid. The scope ${scopeParameter} is not valid.`,
  );
}

export function unknownResource(resource: string, tenantId: string): EntraError {
  return new EntraError(
    400,
    'invalid_resource',
    500011,
    `The resource principal named ${resource} was not found in the tenant named ${tenantId}. This can happen ` +
      `if the application has not been installed by the administrator of the tenant or consented to by any user ` +
      `in the tenant. You might have sent your authentication request to the wrong tenant.`,
  );
}

type LocalExtension = Pick<TokenOptions, 'roles' | 'version' | 'name' | 'oid' | 'expiresInSeconds'>;

export function localExtension(form: URLSearchParams): LocalExtension {
  const extension: LocalExtension = {};
  const roles = form.get('roles');
  if (roles) extension.roles = roles.split(/[\s,]+/).filter(Boolean);
  const version = form.get('token_version');
  if (version) {
    if (version !== '1' && version !== '2') throw malformedRequest("The 'token_version' parameter must be 1 or 2.");
    extension.version = version === '1' ? 1 : 2;
  }
  const name = form.get('name');
  if (name) extension.name = name;
  const oid = form.get('oid')?.toLowerCase();
  if (oid) {
    if (!GUID.test(oid)) throw malformedRequest("The 'oid' parameter must be a GUID.");
    extension.oid = oid;
  }
  const expiresIn = form.get('expires_in');
  if (expiresIn) {
    if (!/^[1-9]\d{0,7}$/.test(expiresIn)) throw malformedRequest("The 'expires_in' parameter must be a positive number of seconds.");
    extension.expiresInSeconds = Number(expiresIn);
  }
  return extension;
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
    throw invalidClient(
      700027,
      `Client assertion contains an invalid signature. [Reason - The key was not found., Thumbprint of key used by client: ` +
        `'${typeof thumbprint === 'string' ? thumbprint : ''}']`,
    );
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
    throw invalidClient(
      700024,
      `Client assertion is not within its valid time range. Current time: ${entraTime(now * 1000)}, ` +
        `expiry time of assertion ${entraTime((claims.exp ?? 0) * 1000)}.`,
    );
  }
}
