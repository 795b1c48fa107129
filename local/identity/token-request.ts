/**
 * The token endpoint's form as Entra reads it: the client and its credential (client_secret_post, client_secret_basic
 * or private_key_jwt), the scope parameter as the one resource it names, and the LOCAL DEVELOPMENT EXTENSION
 * fields. The grants that answer it are in grants.ts and on-behalf-of.ts.
 */
import { errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { GUID } from '../defaults.js';
import { decodedJwt, v2Issuer } from './entra-token.js';
import { DEFAULT_TOKEN_LIFETIME_SECONDS, type TokenOptions } from './claims.js';
import { EntraError, malformedRequest, outsideLifetime } from './entra-error.js';

const OPENID_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
// Allowed for the nbf of client assertions, whose clients' clocks may run ahead.
const CLIENT_ASSERTION_CLOCK_SKEW_SECONDS = 300;

export interface TokenEndpointContext {
  tenantId: string;
  /** The API's client id, and the audiences of its tokens: api://<clientId> and the client id. */
  clientId: string;
  audiences: string[];
  authorityHost: string;
  /** The provider's published keys, which verify the assertions On-Behalf-Of takes. */
  keys: JWTVerifyGetKey;
  /** The API's federated identity credentials: the tokens it may present instead of a secret or a certificate. */
  federatedIdentityCredentials: FederatedIdentityCredential[];
  issueToken(options: TokenOptions): Promise<string>;
}

/**
 * What Entra's federated identity credential of an app registration (`az ad app federated-credential create`) says:
 * a token with this issuer, subject and one of these audiences is the app's client assertion. For a managed
 * identity: issuer `<authority>/<tenant>/v2.0`, subject its object id, audience `api://AzureADTokenExchange`.
 */
export interface FederatedIdentityCredential {
  name: string;
  issuer: string;
  subject: string;
  audiences: string[];
}

/** The client of a token request, and how it authenticated (appidacr): 0 not at all (a public client), 1 a secret, 2 a certificate. */
export interface TokenClient {
  id: string;
  authentication: '0' | '1' | '2';
}

export function requiredParameter(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (!value) throw new EntraError('invalid_request', 900144, `The request body must contain the following parameter: '${name}'.`);
  return value;
}

/**
 * The scope parameter's one resource, which must be one of `resources` (lower case), and its scopes without those
 * of OpenID Connect; `.default`, which comes alone, stands for the scopes consented to.
 */
export function requestedScopes(form: URLSearchParams, tenantId: string, resources: string[], consented: string[]) {
  const scopeParameter = requiredParameter(form, 'scope');
  const invalidScope = (): never => {
    throw new EntraError('invalid_scope', 70011, `The provided value for the input parameter 'scope' is not valid. The scope ${scopeParameter} is not valid.`);
  };
  const scopes = scopeParameter
    .split(/\s+/)
    .filter((scope) => scope && !OPENID_SCOPES.has(scope))
    .map((scope) => /^(.+)\/([^/]+)$/.exec(scope) ?? invalidScope());
  const resource = scopes[0]?.[1] ?? invalidScope();
  if (scopes.some(([, other]) => other !== resource)) {
    const description = 'Provided value for the input parameter scope is not valid because it contains more than one resource.';
    throw new EntraError('invalid_scope', 28000, `${description} Scope ${scopeParameter} is not valid.`);
  }
  if (!resources.includes(resource.toLowerCase())) {
    const why = 'This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant.';
    throw new EntraError('invalid_resource', 500011, `The resource principal named ${resource} was not found in the tenant named ${tenantId}. ${why}`);
  }
  const names = scopes.map(([, , name]) => name!);
  if (!names.includes('.default')) return { resource, names };
  if (names.length > 1) invalidScope();
  return { resource, names: consented };
}

export const tokenResponse = (scopes: { resource: string; names: string[] }, lifetime: number, accessToken: string) => ({
  token_type: 'Bearer',
  scope: scopes.names.map((name) => `${scopes.resource}/${name}`).join(' '),
  expires_in: lifetime,
  ext_expires_in: lifetime,
  access_token: accessToken,
});

/**
 * LOCAL DEVELOPMENT EXTENSION fields (Entra has none of them): `roles` (separated by spaces or commas),
 * `token_version` (1 or 2), `name`, `oid` and `expires_in` (seconds, an hour when not given), the only one On-Behalf-Of applies.
 */
export function localExtension(form: URLSearchParams) {
  const checked = (name: string, valid: RegExp, problem: string) => {
    const value = form.get(name)?.toLowerCase() || undefined;
    if (value !== undefined && !valid.test(value)) throw malformedRequest(`The '${name}' parameter must be ${problem}.`);
    return value;
  };
  const version = checked('token_version', /^[12]$/, '1 or 2');
  const expiresIn = checked('expires_in', /^[1-9]\d{0,7}$/, 'a positive number of seconds');
  return {
    roles: form.get('roles')?.match(/[^\s,]+/g) ?? undefined,
    version: version ? (Number(version) as 1 | 2) : undefined,
    name: form.get('name') || undefined,
    oid: checked('oid', GUID, 'a GUID'),
    expiresInSeconds: expiresIn ? Number(expiresIn) : DEFAULT_TOKEN_LIFETIME_SECONDS,
  };
}

/**
 * The client, from the Authorization header (client_secret_basic) or the form (client_secret_post, private_key_jwt),
 * and its credential checked: any non-empty secret does, or a client assertion.
 */
export async function authenticateClient(form: URLSearchParams, authorizationHeader: string | undefined, context: TokenEndpointContext): Promise<TokenClient> {
  const basic = /^Basic\s+(.+)$/i.exec(authorizationHeader ?? '');
  const [, user, password = ''] = /^([^:]+):(.*)$/s.exec(basic ? Buffer.from(basic[1]!, 'base64').toString('utf8') : '') ?? [];
  const id = user ? formDecode(user) : requiredParameter(form, 'client_id');
  const secret = user ? formDecode(password) : form.get('client_secret');
  const assertion = user ? null : form.get('client_assertion');
  // The password grant is a public client's, which has no credential.
  if (form.get('grant_type') === 'password') return { id, authentication: '0' };
  if (secret) return { id, authentication: '1' };
  if (!assertion) {
    throw new EntraError('invalid_client', 7000218, "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.");
  }
  await checkClientAssertion(id, form.get('client_assertion_type'), assertion, context);
  return { id, authentication: '2' };
}

/** RFC 6749 2.3.1 has clients form-urlencode both parts of Basic credentials; some send them raw. */
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return value;
  }
}

/**
 * A client assertion (RFC 7523) as Entra wants it: a token of an issuer the client's federated identity credentials
 * name (an https URL), or else a certificate credential, checked except for the signature (no certificate is
 * registered here).
 */
async function checkClientAssertion(clientId: string, type: string | null, assertion: string, context: TokenEndpointContext): Promise<void> {
  const guide = 'Review the documentation at https://learn.microsoft.com/entra/identity-platform/certificate-credentials.';
  if (type !== CLIENT_ASSERTION_TYPE) throw malformedRequest(`The 'client_assertion_type' parameter must be '${CLIENT_ASSERTION_TYPE}'.`);
  const { header, claims } = decodedJwt(assertion, () => new EntraError('invalid_client', 50027, 'JWT token is invalid or malformed.'));
  if (typeof claims.iss === 'string' && claims.iss.startsWith('https://')) return checkFederatedAssertion(clientId, assertion, claims, context);
  const thumbprint = header.x5t ?? header['x5t#S256'];
  if ((header.alg !== 'RS256' && header.alg !== 'PS256') || typeof thumbprint !== 'string') {
    const reason = `[Reason - The key was not found., Thumbprint of key used by client: '${typeof thumbprint === 'string' ? thumbprint : ''}']`;
    throw new EntraError('invalid_client', 700027, `Client assertion contains an invalid signature. ${reason}`);
  }
  if (claims.iss !== clientId || claims.sub !== clientId) {
    throw new EntraError('invalid_client', 700021, `Client assertion application identifier doesn't match 'client_id' parameter. ${guide}`);
  }
  const base = `${context.authorityHost}/${context.tenantId}`;
  const audiences = [`${base}/oauth2/v2.0/token`, `${base}/oauth2/token`, v2Issuer(context.authorityHost, context.tenantId)];
  if (typeof claims.aud !== 'string' || !audiences.includes(claims.aud.toLowerCase())) {
    throw new EntraError('invalid_client', 700023, `Client assertion audience claim does not match Realm issuer. ${guide}`);
  }
  const now = Math.floor(Date.now() / 1000);
  if (typeof claims.exp !== 'number' || claims.exp <= now || (claims.nbf ?? 0) > now + CLIENT_ASSERTION_CLOCK_SKEW_SECONDS) {
    throw new EntraError('invalid_client', 700024, outsideLifetime('Client assertion', claims.exp));
  }
}

/**
 * A federated client assertion, as Entra checks one: a credential of the client with the token's issuer, then one
 * with its subject and audience too, then the token itself, which this provider issued (a managed identity's).
 */
async function checkFederatedAssertion(clientId: string, assertion: string, claims: JWTPayload, context: TokenEndpointContext): Promise<void> {
  const guide = 'Please check your federated identity credential Subject, Audience and Issuer against the presented assertion.';
  const credentials = clientId.toLowerCase() === context.clientId ? context.federatedIdentityCredentials : [];
  const ofIssuer = credentials.filter((credential) => credential.issuer === claims.iss);
  if (!ofIssuer.length) {
    throw new EntraError('invalid_client', 700211, `No matching federated identity record found for presented assertion issuer '${claims.iss}'. ${guide}`);
  }
  const audience = typeof claims.aud === 'string' ? claims.aud : '';
  if (!ofIssuer.some((credential) => credential.subject === claims.sub && credential.audiences.includes(audience))) {
    const presented = `Assertion Issuer: '${claims.iss}'. Assertion Subject: '${claims.sub}'. Assertion Audience: '${audience}'.`;
    throw new EntraError('invalid_client', 70021, `No matching federated identity record found for presented assertion. ${presented} ${guide}`);
  }
  try {
    await jwtVerify(assertion, context.keys, { algorithms: ['RS256'], clockTolerance: CLIENT_ASSERTION_CLOCK_SKEW_SECONDS });
  } catch (error) {
    if (error instanceof errors.JWTExpired) throw new EntraError('invalid_client', 700024, outsideLifetime('Client assertion', claims.exp));
    throw new EntraError('invalid_client', 700027, 'Client assertion failed signature validation.');
  }
}
