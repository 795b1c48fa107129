/**
 * Client authentication at the token endpoint: the client id and credential read from the form
 * (client_secret_post, private_key_jwt) or the Authorization header (client_secret_basic), and the check of a
 * confidential client's credential: any non-empty secret, or a client assertion JWT whose shape, iss, sub,
 * aud and lifetime are checked as Entra does, but not its signature (no certificate is registered here).
 */
import { decodeJwt, decodeProtectedHeader, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import { EntraError, entraTime } from './entra-error.js';
import { v2Issuer } from './openid-metadata.js';
import { requiredParameter, type TokenEndpointContext } from './token-request.js';

const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
// Allowed for the nbf of client assertions, whose clients' clocks may run ahead.
const CLIENT_ASSERTION_CLOCK_SKEW_SECONDS = 300;

export interface ClientCredentials {
  id: string;
  secret?: string;
  assertion?: { type: string | null; jwt: string };
}

/** Client id and credential from the form (client_secret_post, private_key_jwt) or the Authorization header (client_secret_basic). */
export function clientCredentials(form: URLSearchParams, authorizationHeader: string | undefined): ClientCredentials {
  const basic = /^Basic\s+(.+)$/i.exec(authorizationHeader ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const separator = decoded.indexOf(':');
    if (separator > 0) {
      return { id: formDecode(decoded.slice(0, separator)), secret: formDecode(decoded.slice(separator + 1)) || undefined };
    }
  }
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

/** Checks a confidential client's credential; returns how it authenticated, as appidacr says: 1 secret, 2 certificate. */
export function authenticateClient(client: ClientCredentials, context: TokenEndpointContext): '1' | '2' {
  if (client.secret) return '1';
  if (client.assertion) {
    checkClientAssertion(client.id, client.assertion, context);
    return '2';
  }
  throw new EntraError(401, 'invalid_client', 7000218, "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.");
}

/** A certificate credential (RFC 7523) as Entra wants it, except the signature: no certificate is registered here. */
function checkClientAssertion(clientId: string, assertion: { type: string | null; jwt: string }, context: TokenEndpointContext): void {
  if (assertion.type !== CLIENT_ASSERTION_TYPE) {
    throw new EntraError(
      400,
      'invalid_request',
      9002313,
      `Invalid request. Request is malformed or invalid. - The 'client_assertion_type' parameter must be '${CLIENT_ASSERTION_TYPE}'.`,
    );
  }
  let header: ProtectedHeaderParameters;
  let claims: JWTPayload;
  try {
    header = decodeProtectedHeader(assertion.jwt);
    claims = decodeJwt(assertion.jwt);
  } catch {
    throw new EntraError(401, 'invalid_client', 50027, 'JWT token is invalid or malformed.');
  }
  const thumbprint = header.x5t ?? header['x5t#S256'];
  if ((header.alg !== 'RS256' && header.alg !== 'PS256') || typeof thumbprint !== 'string') {
    throw new EntraError(
      401,
      'invalid_client',
      700027,
      `Client assertion contains an invalid signature. [Reason - The key was not found., Thumbprint of key used ` +
        `by client: '${typeof thumbprint === 'string' ? thumbprint : ''}']`,
    );
  }
  if (claims.iss !== clientId || claims.sub !== clientId) {
    throw new EntraError(
      401,
      'invalid_client',
      700021,
      "Client assertion application identifier doesn't match 'client_id' parameter. Review the documentation at https://learn.microsoft.com/entra/identity-platform/certificate-credentials.",
    );
  }
  const base = `${context.authorityHost}/${context.tenantId}`;
  const audiences = [`${base}/oauth2/v2.0/token`, `${base}/oauth2/token`, v2Issuer(context.authorityHost, context.tenantId)];
  if (typeof claims.aud !== 'string' || !audiences.includes(claims.aud.toLowerCase())) {
    throw new EntraError(
      401,
      'invalid_client',
      700023,
      'Client assertion audience claim does not match Realm issuer. Review the documentation at https://learn.microsoft.com/entra/identity-platform/certificate-credentials.',
    );
  }
  const now = Math.floor(Date.now() / 1000);
  if (typeof claims.exp !== 'number' || claims.exp <= now || (claims.nbf ?? 0) > now + CLIENT_ASSERTION_CLOCK_SKEW_SECONDS) {
    throw new EntraError(
      401,
      'invalid_client',
      700024,
      `Client assertion is not within its valid time range. Current time: ${entraTime(now * 1000)}, expiry time ` +
        `of assertion ${entraTime((claims.exp ?? 0) * 1000)}.`,
    );
  }
}
