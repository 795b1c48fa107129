/**
 * Local stand-in for Microsoft Entra ID.
 *
 * It serves, per tenant and on Entra's paths, the OpenID metadata (v1 and v2), the signing keys and a token
 * endpoint, so the real `jose` and `@azure/msal-node` code paths run against it over HTTPS.
 * Tokens carry the claims Entra puts in v1 and v2 access tokens.
 *
 * Grants: client_credentials, password, and On-Behalf-Of (jwt-bearer with requested_token_use=on_behalf_of).
 * Confidential clients authenticate with any non-empty client secret, or a client assertion JWT whose shape,
 * iss, sub, aud and lifetime are checked (its certificate signature is not: no certificate is registered).
 * On-Behalf-Of takes an access token this provider issued to the API for a user of the tenant, and issues a
 * v1 Microsoft Graph token (aud https://graph.microsoft.com), as Entra does for Graph whatever the endpoint;
 * Graph is the only downstream resource this directory knows. With openid and client_info=1 (msal-node sends
 * both) the answer also has an id_token and client_info. It has no refresh_token: this provider could not
 * redeem one.
 *
 * LOCAL DEVELOPMENT EXTENSIONS (Entra has no such fields or rules):
 * - optional form fields of the token endpoint:
 *   - `roles`: app role values for the `roles` claim, separated by spaces or commas;
 *   - `token_version`: `1` (default) or `2`;
 *   - `name`: display name of the user;
 *   - `oid`: object id (default: derived from tenant and user name, so a user keeps its oid across runs);
 *   - `expires_in`: lifetime in seconds (default 3600); the only one that applies to On-Behalf-Of, whose
 *     user comes from the assertion.
 * - On-Behalf-Of failures chosen by the user name (upn or preferred_username) of the assertion, so that tests
 *   can reach every error path of a caller:
 *   - `needs-consent...`: invalid_grant AADSTS65001 with suberror consent_required (consent missing);
 *   - `needs-mfa...`: interaction_required AADSTS50076 with suberror basic_action and a claims challenge
 *     (Conditional Access asks for multi-factor authentication).
 * Any non-empty client secret and password are accepted, and any scope name the API or Graph could expose;
 * Graph's `.default` grants GRAPH_CONSENTED_SCOPES.
 */
import { createHash, randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  exportJWK,
  exportPKCS8,
  exportSPKI,
  generateKeyPair,
  importJWK,
  importPKCS8,
  jwtVerify,
  SignJWT,
  type CryptoKey,
  type JWK,
  type JWTPayload,
  type ProtectedHeaderParameters,
} from 'jose';
import { generate as generateCertificate } from 'selfsigned';
import { z } from 'zod';
import { localDataDir } from './defaults.js';
import { CERTIFICATE_VALIDITY_DAYS, daysFromNow, isFileMissing, loadOrCreatePemPair, loadOrCreateTlsCertificate, type TlsCertificate } from './tls.js';
import { keepIdleConnectionsOpen } from './idle-connections.js';

export type { TlsCertificate };

export interface IdentityProviderOptions {
  /** 0 picks a free port. Default 0. */
  port?: number;
  /** Listen address. Default '127.0.0.1'. */
  host?: string;
  /**
   * Where the TLS certificate and the token signing key are kept, so a restart keeps issued tokens valid and
   * the CA file path stable. Without it, the signing key lives in memory and the TLS certificate in a temporary
   * folder that close() removes.
   */
  dataDir?: string;
  /** A TLS certificate (valid for localhost) shared with other local servers; then none is created or stored. */
  tls?: TlsCertificate;
  /** Tenant ids served; any other tenant in a path gets Entra's invalid_tenant error. */
  tenants: string[];
  /** Application (client) id of the API: tokens default to the audience api://<clientId>. */
  clientId: string;
}

export interface TokenOptions {
  /** Not checked against the served tenants, so tests can mint tokens of foreign tenants. */
  tenantId: string;
  kind: 'user' | 'app';
  roles?: string[];
  /** User principal name. Default DEFAULT_LOCAL_USERNAME. */
  username?: string;
  /** Default: the part of the user name before '@'. */
  name?: string;
  /** Default: derived from tenant and user name (users) or tenant and client (apps). */
  oid?: string;
  /** Access token version. Default 1. */
  version?: 1 | 2;
  /** Delegated scope names for the `scp` claim of user tokens. Default ['access_as_user']. */
  scopes?: string[];
  /** Default: api://<clientId> for v1, <clientId> for v2. */
  audience?: string;
  /** Application the token is issued to (appid/azp). Default: the API's own client id. */
  clientAppId?: string;
  /** How that application authenticated (appidacr/azpacr): '0' public client, '1' secret, '2' certificate. Default: '0' for users, '1' for apps. */
  clientAuthentication?: '0' | '1' | '2';
  /** Default 3600. */
  expiresInSeconds?: number;
  /** Added last, so they can override any claim. */
  extraClaims?: Record<string, unknown>;
}

export interface IdentityProvider {
  /** 'https://localhost:<port>' */
  authorityHost: string;
  port: number;
  /** The self-signed TLS certificate clients must trust. */
  caCertPem: string;
  /** File holding caCertPem, for NODE_EXTRA_CA_CERTS. */
  caCertPath: string;
  signingKid: string;
  /** Private signing key, for tests that craft tokens the provider would never issue. */
  privateJwk: JWK;
  /** Requests received per endpoint kind; onBehalfOf counts the token requests of that grant, failed ones too. */
  counts: { metadata: number; jwks: number; token: number; onBehalfOf: number };
  issueToken(options: TokenOptions): Promise<string>;
  close(): Promise<void>;
}

/** What `npm start` publishes so that `npm run token` can find the running provider. */
export interface IdentityProviderInfo {
  authorityHost: string;
  tenants: string[];
  clientId: string;
  caCertPath: string;
}

/** Data directory of the provider started by `npm start` from the project at `root`. */
export const localIdentityDataDir = (root: string): string => path.join(localDataDir(root), 'identity');
export const DEFAULT_LOCAL_USERNAME = 'dev@contoso.test';
/** The delegated scope the API exposes. */
export const API_USER_SCOPE = 'access_as_user';
/** The audience of the Microsoft Graph tokens On-Behalf-Of issues. */
export const GRAPH_RESOURCE = 'https://graph.microsoft.com';
/** Microsoft Graph's application id, the other name Entra knows Graph by. */
export const GRAPH_APP_ID = '00000003-0000-0000-c000-000000000000';
/** What Graph's `.default` scope grants: the delegated permissions the API is taken to have, admin-consented. */
export const GRAPH_CONSENTED_SCOPES = ['User.Read', 'User.Read.All'];
/** User name prefixes that make On-Behalf-Of fail (LOCAL DEVELOPMENT EXTENSION). */
export const NEEDS_CONSENT_USER_PREFIX = 'needs-consent';
export const NEEDS_MFA_USER_PREFIX = 'needs-mfa';

const DEFAULT_TOKEN_LIFETIME_SECONDS = 3600;
const ON_BEHALF_OF_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
// Allowed for the nbf of client assertions, whose clients' clocks may run ahead.
const CLIENT_ASSERTION_CLOCK_SKEW_SECONDS = 300;
// The Conditional Access policy named in the claims challenge of simulated MFA; any GUID does.
const MFA_POLICY_ID = 'c0ffee00-1e55-4a11-8b0b-5eedfacade01';
const OPENID_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);
const GUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_REQUEST_BODY_BYTES = 64 * 1024;

const FILES = {
  signingCert: 'signing-cert.pem',
  signingKey: 'signing-key.pem',
  providerInfo: 'provider.json',
} as const;

type Endpoint = { kind: 'metadata' | 'jwks'; method: 'GET'; version: 1 | 2 } | { kind: 'token'; method: 'POST' };

// Paths below /{tenant}/, as Entra spells them.
const ENDPOINTS = new Map<string, Endpoint>([
  ['v2.0/.well-known/openid-configuration', { kind: 'metadata', method: 'GET', version: 2 }],
  ['.well-known/openid-configuration', { kind: 'metadata', method: 'GET', version: 1 }],
  ['discovery/v2.0/keys', { kind: 'jwks', method: 'GET', version: 2 }],
  ['discovery/keys', { kind: 'jwks', method: 'GET', version: 1 }],
  ['oauth2/v2.0/token', { kind: 'token', method: 'POST' }],
]);

export async function startIdentityProvider(options: IdentityProviderOptions): Promise<IdentityProvider> {
  const tenants = new Set(options.tenants.map((tenant) => tenant.toLowerCase()));
  const clientId = options.clientId.toLowerCase();
  // Callers need the CA certificate in a file even when nothing is kept.
  const temporaryDir = options.tls || options.dataDir ? undefined : await mkdtemp(path.join(os.tmpdir(), 'local-identity-provider-'));
  try {
    const tls = options.tls ?? (await loadOrCreateTlsCertificate(options.dataDir ?? temporaryDir!));
    const signingKey = await loadOrCreateSigningKey(options.dataDir);

    const counts = { metadata: 0, jwks: 0, token: 0, onBehalfOf: 0 };
    let authorityHost = '';
    const issueToken = (tokenOptions: TokenOptions) => signAccessToken(tokenOptions, { authorityHost, clientId, signingKey });

    const server = keepIdleConnectionsOpen(
      https.createServer({ cert: tls.cert, key: tls.key }, (request, response) => {
        handleRequest(request, response).catch((error: unknown) => {
          console.error('identity provider: request failed', error);
          if (!response.headersSent) sendJson(response, 500, { error: 'server_error', error_description: String(error) });
        });
      }),
    );

    async function handleRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
      const url = new URL(request.url ?? '/', authorityHost);
      const match = /^\/([^/]+)\/(.+)$/.exec(url.pathname);
      const endpoint = match ? ENDPOINTS.get(match[2]!) : undefined;
      if (!match || !endpoint) {
        sendJson(response, 404, { error: 'not_found', error_description: `No endpoint at ${request.method} ${url.pathname}.` });
        return;
      }
      counts[endpoint.kind] += 1;
      try {
        const tenantId = match[1]!.toLowerCase();
        if (!tenants.has(tenantId)) {
          throw new EntraError(
            400,
            'invalid_tenant',
            90002,
            `Tenant '${tenantId}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
          );
        }
        if (request.method !== endpoint.method) {
          if (endpoint.kind === 'token') {
            throw new EntraError(400, 'invalid_request', 900561, `The endpoint only accepts POST requests. Received a ${request.method} request.`);
          }
          sendJson(response, 405, { error: 'method_not_allowed', error_description: `Use ${endpoint.method}.` }, { Allow: endpoint.method });
          return;
        }
        switch (endpoint.kind) {
          case 'metadata':
            sendJson(response, 200, openIdConfiguration(authorityHost, tenantId, endpoint.version), CACHEABLE);
            return;
          case 'jwks':
            sendJson(response, 200, { keys: [publicSigningJwk(signingKey, authorityHost, tenantId, endpoint.version)] }, CACHEABLE);
            return;
          case 'token': {
            const form = new URLSearchParams(await readBody(request));
            if (form.get('grant_type') === ON_BEHALF_OF_GRANT_TYPE) counts.onBehalfOf += 1;
            const tokenResponse = await handleTokenRequest(form, request.headers.authorization, {
              tenantId,
              clientId,
              authorityHost,
              signingKey,
              issueToken,
            });
            sendJson(response, 200, tokenResponse, NOT_CACHEABLE);
            return;
          }
        }
      } catch (error) {
        if (!(error instanceof EntraError)) throw error;
        const correlationId = headerValue(request.headers['client-request-id']) ?? randomUUID();
        sendJson(response, error.status, entraErrorBody(error, correlationId), NOT_CACHEABLE);
      }
    }

    const port = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');
    authorityHost = `https://localhost:${port}`;

    return {
      authorityHost,
      port,
      caCertPem: tls.cert,
      caCertPath: tls.certPath,
      signingKid: signingKey.kid,
      privateJwk: signingKey.privateJwk,
      counts,
      issueToken,
      async close() {
        await new Promise<void>((resolve, reject) => {
          server.close((error) => (error ? reject(error) : resolve()));
          // Keep-alive connections would otherwise hold close() open.
          server.closeAllConnections();
        });
        if (temporaryDir) await rm(temporaryDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (temporaryDir) await rm(temporaryDir, { recursive: true, force: true });
    throw error;
  }
}

export async function writeIdentityProviderInfo(dataDir: string, info: IdentityProviderInfo): Promise<string> {
  const file = path.join(dataDir, FILES.providerInfo);
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${JSON.stringify(info, null, 2)}\n`);
  return file;
}

const identityProviderInfoSchema = z.object({
  authorityHost: z.string(),
  tenants: z.array(z.string()),
  clientId: z.string(),
  caCertPath: z.string(),
});

export async function readIdentityProviderInfo(dataDir: string): Promise<IdentityProviderInfo> {
  const file = path.resolve(dataDir, FILES.providerInfo);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (isFileMissing(error)) {
      throw new Error(`No local identity provider found (${file} is missing): start the API with \`npm start\` first.`, { cause: error });
    }
    throw error;
  }
  const parsed = identityProviderInfoSchema.safeParse(parseJsonOrUndefined(text));
  if (!parsed.success) {
    throw new Error(`${file} is not a valid identity provider description: start the API with \`npm start\` again.`);
  }
  return parsed.data;
}

function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- token endpoint

interface TokenEndpointContext {
  tenantId: string;
  /** The API's client id. */
  clientId: string;
  authorityHost: string;
  signingKey: SigningKey;
  issueToken(options: TokenOptions): Promise<string>;
}

interface TokenResponse {
  token_type: 'Bearer';
  scope: string;
  expires_in: number;
  ext_expires_in: number;
  access_token: string;
  id_token?: string;
  client_info?: string;
}

async function handleTokenRequest(form: URLSearchParams, authorizationHeader: string | undefined, context: TokenEndpointContext): Promise<TokenResponse> {
  const grantType = requiredParameter(form, 'grant_type');
  const client = clientCredentials(form, authorizationHeader);
  const extension = localExtension(form);
  const lifetime = extension.expiresInSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
  const sharedTokenOptions = {
    tenantId: context.tenantId,
    clientAppId: client.id,
    roles: extension.roles,
    version: extension.version,
    oid: extension.oid,
    expiresInSeconds: lifetime,
  };

  let tokenOptions: TokenOptions;
  let grantedScope: string;
  switch (grantType) {
    case 'client_credentials': {
      const clientAuthentication = authenticateClient(client, context);
      const scope = requiredParameter(form, 'scope');
      const requested = requestedApiScopes(scope, context);
      if (requested.names.length !== 1 || requested.names[0] !== '.default') {
        throw new EntraError(
          400,
          'invalid_scope',
          1002012,
          `The provided value for scope ${scope} is not valid. Client credential flows must have a scope value with ` +
            `/.default suffixed to the resource identifier (application ID URI).`,
        );
      }
      tokenOptions = {
        ...sharedTokenOptions,
        kind: 'app',
        audience: audienceFor(requested.resource, extension.version),
        clientAuthentication,
      };
      grantedScope = `${requested.resource}/.default`;
      break;
    }
    case 'password': {
      const username = requiredParameter(form, 'username');
      requiredParameter(form, 'password');
      const requested = requestedApiScopes(requiredParameter(form, 'scope'), context);
      // '.default' asks for every scope consented to, and the API exposes just one.
      const scopes = requested.names.includes('.default') ? [API_USER_SCOPE] : requested.names;
      tokenOptions = {
        ...sharedTokenOptions,
        kind: 'user',
        username,
        name: extension.name,
        scopes,
        audience: audienceFor(requested.resource, extension.version),
      };
      grantedScope = scopes.map((name) => `${requested.resource}/${name}`).join(' ');
      break;
    }
    case ON_BEHALF_OF_GRANT_TYPE:
      return onBehalfOf(form, client, lifetime, context);
    default:
      throw new EntraError(400, 'unsupported_grant_type', 70003, `The app requested an unsupported grant type '${grantType}'.`);
  }

  return {
    token_type: 'Bearer',
    scope: grantedScope,
    expires_in: lifetime,
    ext_expires_in: lifetime,
    access_token: await context.issueToken(tokenOptions),
  };
}

/** Entra puts the resource as requested (app ID URI or client id) in the aud of v1 tokens; v2 always has the client id. */
function audienceFor(resource: string, version: 1 | 2 | undefined): string | undefined {
  return (version ?? 1) === 1 ? resource : undefined;
}

/** Scopes of the one resource a token request may name, without the OpenID Connect scopes. */
function requestedScopes(scopeParameter: string): { resource: string; names: string[] } {
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

function requestedApiScopes(scopeParameter: string, context: TokenEndpointContext): { resource: string; names: string[] } {
  const requested = requestedScopes(scopeParameter);
  if (!apiAudiences(context.clientId).includes(requested.resource.toLowerCase())) {
    throw unknownResource(requested.resource, context.tenantId);
  }
  return requested;
}

function apiAudiences(clientId: string): string[] {
  return [`api://${clientId}`, clientId];
}

function invalidScope(scopeParameter: string): EntraError {
  return new EntraError(
    400,
    'invalid_scope',
    70011,
    `The provided request must include a 'scope' input parameter. The provided value for the input parameter ` +
      `'scope' is not valid. The scope ${scopeParameter} is not valid.`,
  );
}

function unknownResource(resource: string, tenantId: string): EntraError {
  return new EntraError(
    400,
    'invalid_resource',
    500011,
    `The resource principal named ${resource} was not found in the tenant named ${tenantId}. This can happen ` +
      `if the application has not been installed by the administrator of the tenant or consented to by any user ` +
      `in the tenant. You might have sent your authentication request to the wrong tenant.`,
  );
}

// ---------------------------------------------------------------- On-Behalf-Of

interface AssertedUser {
  oid: string;
  username: string;
  name: string | undefined;
}

/**
 * Exchanges a user's access token to the API (the assertion) for a Microsoft Graph token of the same user,
 * issued to the API, as Entra's v2 token endpoint does.
 */
async function onBehalfOf(form: URLSearchParams, client: ClientCredentials, lifetime: number, context: TokenEndpointContext): Promise<TokenResponse> {
  const clientAuthentication = authenticateClient(client, context);
  if (requiredParameter(form, 'requested_token_use') !== 'on_behalf_of') {
    throw new EntraError(
      400,
      'invalid_request',
      9002313,
      "Invalid request. Request is malformed or invalid. - The 'requested_token_use' parameter must be 'on_behalf_of'.",
    );
  }
  const scopeParameter = requiredParameter(form, 'scope');
  const user = await verifyUserAssertion(requiredParameter(form, 'assertion'), client.id, context);
  const scopes = requestedGraphScopes(scopeParameter, context);
  const simulatedFailure = simulatedOnBehalfOfFailure(user.username, client.id);
  if (simulatedFailure) throw simulatedFailure;

  const accessToken = await context.issueToken({
    tenantId: context.tenantId,
    kind: 'user',
    // Graph accepts only v1 tokens, so Entra issues v1 tokens for Graph whichever endpoint is asked.
    version: 1,
    username: user.username,
    name: user.name,
    oid: user.oid,
    scopes: scopes.names,
    audience: GRAPH_RESOURCE,
    clientAppId: client.id,
    clientAuthentication,
    expiresInSeconds: lifetime,
  });
  const openIdRequested = scopeParameter.split(/\s+/).includes('openid');
  return {
    token_type: 'Bearer',
    scope: scopes.names.map((name) => `${scopes.resource}/${name}`).join(' '),
    expires_in: lifetime,
    ext_expires_in: lifetime,
    access_token: accessToken,
    ...(openIdRequested ? { id_token: await signIdToken(user, client.id, context) } : {}),
    ...(form.get('client_info') === '1' ? { client_info: clientInfo(user.oid, context.tenantId) } : {}),
  };
}

/** The user of an assertion, once it is known to be a user's access token to the API from this provider and tenant. */
async function verifyUserAssertion(assertion: string, presentingClientId: string, context: TokenEndpointContext): Promise<AssertedUser> {
  const malformed = () => new EntraError(400, 'invalid_grant', 50027, 'JWT token is invalid or malformed.');
  // Entra's code for an assertion that is invalid for any other reason.
  const invalid = (description: string) => new EntraError(400, 'invalid_grant', 50013, description);

  let header: ProtectedHeaderParameters;
  let claims: JWTPayload;
  try {
    header = decodeProtectedHeader(assertion);
    claims = decodeJwt(assertion);
  } catch {
    throw malformed();
  }
  const thumbprint = header.x5t ?? header.kid ?? '';
  if (header.kid !== context.signingKey.kid) {
    throw invalid(`Assertion failed signature validation. [Reason - The key was not found., Thumbprint of key used by client: '${thumbprint}']`);
  }
  try {
    await jwtVerify(assertion, context.signingKey.publicKey, { algorithms: ['RS256'] });
  } catch (error) {
    if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
      throw invalid(
        `Assertion failed signature validation. [Reason - The provided signature value did not match the expected ` +
          `signature value., Thumbprint of key used by client: '${thumbprint}']`,
      );
    }
    if (error instanceof joseErrors.JWTClaimValidationFailed || error instanceof joseErrors.JWTExpired) {
      if (error.claim === 'exp' || error.claim === 'nbf') {
        throw new EntraError(
          400,
          'invalid_grant',
          500133,
          `Assertion is not within its valid time range. Ensure that the access token is not expired before using ` +
            `it for user assertion, or request a new token. Current time: ${entraTime(Date.now())}, expiry time of ` +
            `assertion ${entraTime((claims.exp ?? 0) * 1000)}.`,
        );
      }
    }
    throw malformed();
  }

  const issuers = [v1Issuer(context.tenantId), v2Issuer(context.authorityHost, context.tenantId)];
  if (claims.tid !== context.tenantId || !issuers.includes(String(claims.iss))) {
    throw invalid(`Assertion is invalid: its issuer '${String(claims.iss)}' is not '${issuers.join("' or '")}', the issuers of tenant '${context.tenantId}'.`);
  }
  // The assertion must be for the API, and the API must be the client presenting it.
  const audience = typeof claims.aud === 'string' ? claims.aud.toLowerCase() : undefined;
  if (presentingClientId.toLowerCase() !== context.clientId || !audience || !apiAudiences(context.clientId).includes(audience)) {
    throw new EntraError(
      400,
      'invalid_grant',
      500131,
      `Assertion audience does not match the Client app presenting the assertion. The audience in the assertion ` +
        `was '${String(claims.aud)}' and the expected audience is '${presentingClientId}' or one of the Application ` +
        `Uris of this application with App ID '${presentingClientId}'. The downstream client must request a token ` +
        `for the expected audience (the application that made the OBO request) and this application should use ` +
        `that token as the assertion.`,
    );
  }
  // An app-only token has no user to act for; Entra answers such assertions with its InvalidAssertion code too.
  if (typeof claims.scp !== 'string' || claims.idtyp === 'app') {
    throw invalid(
      "Assertion is not a user token: it has no 'scp' claim (an app-only token). The On-Behalf-Of flow needs a delegated access token of a signed-in user.",
    );
  }
  const username = claims.upn ?? claims.preferred_username ?? claims.unique_name;
  if (typeof claims.oid !== 'string' || typeof username !== 'string') {
    throw invalid("Assertion is not a user token: it has no 'oid' and user name claims.");
  }
  return { oid: claims.oid, username, name: typeof claims.name === 'string' ? claims.name : undefined };
}

function requestedGraphScopes(scopeParameter: string, context: TokenEndpointContext): { resource: string; names: string[] } {
  const requested = requestedScopes(scopeParameter);
  const resource = requested.resource.toLowerCase().replace(/\/$/, '');
  if (resource !== GRAPH_RESOURCE && resource !== GRAPH_APP_ID) throw unknownResource(requested.resource, context.tenantId);
  if (!requested.names.includes('.default')) return requested;
  if (requested.names.length > 1) throw invalidScope(scopeParameter);
  return { resource: requested.resource, names: GRAPH_CONSENTED_SCOPES };
}

/** The failures LOCAL DEVELOPMENT EXTENSION users get, in Entra's words. */
function simulatedOnBehalfOfFailure(username: string, clientId: string): EntraError | undefined {
  const name = username.toLowerCase();
  if (name.startsWith(NEEDS_CONSENT_USER_PREFIX)) {
    return new EntraError(
      400,
      'invalid_grant',
      65001,
      `The user or administrator has not consented to use the application with ID '${clientId}' named 'Local ` +
        `API'. Send an interactive authorization request for this user and resource.`,
      { suberror: 'consent_required' },
    );
  }
  if (name.startsWith(NEEDS_MFA_USER_PREFIX)) {
    return new EntraError(
      400,
      'interaction_required',
      50076,
      `Due to a configuration change made by your administrator, or because you moved to a new location, you ` +
        `must use multi-factor authentication to access '${GRAPH_APP_ID}'.`,
      {
        suberror: 'basic_action',
        claims: JSON.stringify({ access_token: { capolids: { essential: true, values: [MFA_POLICY_ID] } } }),
      },
    );
  }
  return undefined;
}

/** Entra's v2 id token of the user for the client, which msal-node turns into the result's account. */
async function signIdToken(user: AssertedUser, clientAppId: string, context: TokenEndpointContext): Promise<string> {
  const issuedAt = Math.floor(Date.now() / 1000);
  return signJwt(
    {
      aud: clientAppId,
      iss: v2Issuer(context.authorityHost, context.tenantId),
      iat: issuedAt,
      nbf: issuedAt,
      exp: issuedAt + DEFAULT_TOKEN_LIFETIME_SECONDS,
      aio: opaqueId(48),
      name: user.name ?? user.username.split('@')[0],
      oid: user.oid,
      preferred_username: user.username,
      sub: pairwiseSubject(context.tenantId, user.oid, clientAppId),
      tid: context.tenantId,
      uti: opaqueId(16),
      ver: '2.0',
    },
    context.signingKey,
  );
}

/** What Entra answers to client_info=1: the account's home object and tenant ids. */
function clientInfo(oid: string, tenantId: string): string {
  return Buffer.from(JSON.stringify({ uid: oid, utid: tenantId })).toString('base64url');
}

/** Entra's time format in error descriptions: ISO 8601 with seven fractional digits. */
function entraTime(milliseconds: number): string {
  return new Date(milliseconds).toISOString().replace(/Z$/, '0000Z');
}

// ---------------------------------------------------------------- client authentication

interface ClientCredentials {
  id: string;
  secret?: string;
  assertion?: { type: string | null; jwt: string };
}

/** Client id and credential from the form (client_secret_post, private_key_jwt) or the Authorization header (client_secret_basic). */
function clientCredentials(form: URLSearchParams, authorizationHeader: string | undefined): ClientCredentials {
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
function authenticateClient(client: ClientCredentials, context: TokenEndpointContext): '1' | '2' {
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

interface LocalExtension {
  roles?: string[];
  version?: 1 | 2;
  name?: string;
  oid?: string;
  expiresInSeconds?: number;
}

function localExtension(form: URLSearchParams): LocalExtension {
  const malformed = (detail: string) => new EntraError(400, 'invalid_request', 9002313, `Invalid request. Request is malformed or invalid. - ${detail}`);
  const extension: LocalExtension = {};

  const roles = form.get('roles');
  if (roles) extension.roles = roles.split(/[\s,]+/).filter(Boolean);

  const version = form.get('token_version');
  if (version) {
    if (version !== '1' && version !== '2') throw malformed("The 'token_version' parameter must be 1 or 2.");
    extension.version = version === '1' ? 1 : 2;
  }

  const name = form.get('name');
  if (name) extension.name = name;

  const oid = form.get('oid');
  if (oid) {
    if (!GUID_PATTERN.test(oid)) throw malformed("The 'oid' parameter must be a GUID.");
    extension.oid = oid.toLowerCase();
  }

  const expiresIn = form.get('expires_in');
  if (expiresIn) {
    if (!/^[1-9]\d{0,7}$/.test(expiresIn)) throw malformed("The 'expires_in' parameter must be a positive number of seconds.");
    extension.expiresInSeconds = Number(expiresIn);
  }
  return extension;
}

function requiredParameter(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (!value) {
    throw new EntraError(400, 'invalid_request', 900144, `The request body must contain the following parameter: '${name}'.`);
  }
  return value;
}

// ---------------------------------------------------------------- tokens

interface SigningKey {
  kid: string;
  /** Base64url SHA-1 thumbprint of the signing certificate; Entra uses it as the kid too. */
  x5t: string;
  certificateDerBase64: string;
  privateKey: CryptoKey;
  privateJwk: JWK;
  /** Verifies the tokens the provider issued (On-Behalf-Of assertions). */
  publicKey: CryptoKey;
  publicJwk: JWK;
}

interface SigningContext {
  authorityHost: string;
  clientId: string;
  signingKey: SigningKey;
}

async function signAccessToken(options: TokenOptions, context: SigningContext): Promise<string> {
  const version = options.version ?? 1;
  const tenantId = options.tenantId.toLowerCase();
  const clientAppId = options.clientAppId ?? context.clientId;
  const issuedAt = Math.floor(Date.now() / 1000);
  const roles = options.roles ?? [];

  const common: JWTPayload = {
    aud: options.audience ?? (version === 1 ? `api://${context.clientId}` : context.clientId),
    iss: version === 1 ? v1Issuer(tenantId) : v2Issuer(context.authorityHost, tenantId),
    iat: issuedAt,
    nbf: issuedAt,
    exp: issuedAt + (options.expiresInSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS),
    aio: opaqueId(48),
    tid: tenantId,
    uti: opaqueId(16),
    ver: version === 1 ? '1.0' : '2.0',
    ...(roles.length > 0 ? { roles } : {}),
  };
  const subject = options.kind === 'app' ? appClaims(options, version, tenantId, clientAppId) : userClaims(options, version, tenantId, clientAppId);

  return signJwt({ ...common, ...subject, ...options.extraClaims }, context.signingKey);
}

function signJwt(payload: JWTPayload, signingKey: SigningKey): Promise<string> {
  return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: signingKey.kid, x5t: signingKey.x5t }).sign(signingKey.privateKey);
}

function appClaims(options: TokenOptions, version: 1 | 2, tenantId: string, clientAppId: string): JWTPayload {
  // The oid of an app-only token is the object id of the client's service principal in the tenant.
  const oid = options.oid ?? deterministicUuid('service-principal', tenantId, clientAppId.toLowerCase());
  const clientAuthentication = options.clientAuthentication ?? '1';
  const client =
    version === 1 ? { appid: clientAppId, appidacr: clientAuthentication, idp: v1Issuer(tenantId) } : { azp: clientAppId, azpacr: clientAuthentication };
  return { ...client, idtyp: 'app', oid, sub: oid };
}

function userClaims(options: TokenOptions, version: 1 | 2, tenantId: string, clientAppId: string): JWTPayload {
  const username = options.username ?? DEFAULT_LOCAL_USERNAME;
  const oid = options.oid ?? localUserObjectId(tenantId, username);
  const scopes = options.scopes ?? [API_USER_SCOPE];
  const clientAuthentication = options.clientAuthentication ?? '0';
  const common = {
    name: options.name ?? username.split('@')[0],
    oid,
    sub: pairwiseSubject(tenantId, oid, clientAppId),
    ...(scopes.length > 0 ? { scp: scopes.join(' ') } : {}),
  };
  return version === 1
    ? { ...common, acr: '1', amr: ['pwd'], appid: clientAppId, appidacr: clientAuthentication, unique_name: username, upn: username }
    : { ...common, azp: clientAppId, azpacr: clientAuthentication, preferred_username: username };
}

/** The object id the provider gives a user name in a tenant, unless a token request names another. */
export function localUserObjectId(tenantId: string, username: string): string {
  return deterministicUuid('user', tenantId.toLowerCase(), username.toLowerCase());
}

/** Entra's sub is pairwise: the same user has a different sub in each application. */
function pairwiseSubject(tenantId: string, oid: string, clientAppId: string): string {
  return createHash('sha256').update(`${tenantId}\n${oid}\n${clientAppId.toLowerCase()}`).digest('base64url');
}

function v1Issuer(tenantId: string): string {
  return `https://sts.windows.net/${tenantId}/`;
}

function v2Issuer(authorityHost: string, tenantId: string): string {
  return `${authorityHost}/${tenantId}/v2.0`;
}

/** A UUID that depends only on its inputs, laid out as a name-based (version 5) UUID. */
function deterministicUuid(...parts: string[]): string {
  const bytes = createHash('sha256').update(parts.join('\n')).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function opaqueId(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

// ---------------------------------------------------------------- metadata and keys

function openIdConfiguration(authorityHost: string, tenantId: string, version: 1 | 2): Record<string, unknown> {
  const base = `${authorityHost}/${tenantId}`;
  const common = {
    token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
    response_modes_supported: ['query', 'fragment', 'form_post'],
    subject_types_supported: ['pairwise'],
    id_token_signing_alg_values_supported: ['RS256'],
    http_logout_supported: true,
    frontchannel_logout_supported: true,
    tenant_region_scope: 'NA',
    cloud_instance_name: 'microsoftonline.com',
    cloud_graph_host_name: 'graph.windows.net',
    msgraph_host: 'graph.microsoft.com',
    rbac_url: 'https://pas.windows.net',
  };
  if (version === 2) {
    return {
      ...common,
      token_endpoint: `${base}/oauth2/v2.0/token`,
      jwks_uri: `${base}/discovery/v2.0/keys`,
      response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      issuer: v2Issuer(authorityHost, tenantId),
      request_uri_parameter_supported: false,
      authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
      end_session_endpoint: `${base}/oauth2/v2.0/logout`,
      claims_supported: [
        'sub',
        'iss',
        'cloud_instance_name',
        'cloud_instance_host_name',
        'cloud_graph_host_name',
        'msgraph_host',
        'aud',
        'exp',
        'iat',
        'auth_time',
        'acr',
        'nonce',
        'preferred_username',
        'name',
        'tid',
        'ver',
        'at_hash',
        'c_hash',
        'email',
      ],
    };
  }
  return {
    ...common,
    token_endpoint: `${base}/oauth2/token`,
    jwks_uri: `${base}/discovery/keys`,
    response_types_supported: ['code', 'id_token', 'code id_token', 'token id_token', 'token'],
    scopes_supported: ['openid'],
    issuer: v1Issuer(tenantId),
    microsoft_multi_refresh_token: true,
    authorization_endpoint: `${base}/oauth2/authorize`,
    end_session_endpoint: `${base}/oauth2/logout`,
    claims_supported: [
      'sub',
      'iss',
      'cloud_instance_name',
      'cloud_instance_host_name',
      'cloud_graph_host_name',
      'msgraph_host',
      'aud',
      'exp',
      'iat',
      'auth_time',
      'acr',
      'amr',
      'nonce',
      'email',
      'given_name',
      'family_name',
      'nickname',
    ],
  };
}

function publicSigningJwk(signingKey: SigningKey, authorityHost: string, tenantId: string, version: 1 | 2): JWK {
  // Like Entra: no alg member; the v2 key set names the issuer the key signs for.
  return {
    kty: signingKey.publicJwk.kty,
    use: 'sig',
    kid: signingKey.kid,
    x5t: signingKey.x5t,
    n: signingKey.publicJwk.n,
    e: signingKey.publicJwk.e,
    x5c: [signingKey.certificateDerBase64],
    ...(version === 2 ? { issuer: v2Issuer(authorityHost, tenantId) } : {}),
  };
}

// ---------------------------------------------------------------- key material

async function loadOrCreateSigningKey(dataDir: string | undefined): Promise<SigningKey> {
  const pems = await loadOrCreatePemPair(dataDir, FILES.signingCert, FILES.signingKey, async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const keyPem = await exportPKCS8(privateKey);
    // Entra publishes each signing key with a certificate (x5c) whose thumbprint is the x5t.
    const certificate = await generateCertificate([{ name: 'commonName', value: 'Local identity provider token signing' }], {
      algorithm: 'sha256',
      notAfterDate: daysFromNow(CERTIFICATE_VALIDITY_DAYS),
      keyPair: { privateKey: keyPem, publicKey: await exportSPKI(publicKey) },
      extensions: [{ name: 'keyUsage', digitalSignature: true, critical: true }],
    });
    return { cert: certificate.cert, key: keyPem };
  });

  const certificateDer = new X509Certificate(pems.cert).raw;
  const x5t = createHash('sha1').update(certificateDer).digest('base64url');
  const privateKey = await importPKCS8(pems.key, 'RS256', { extractable: true });
  const privateJwk: JWK = { ...(await exportJWK(privateKey)), kid: x5t, use: 'sig', alg: 'RS256' };
  const publicJwk: JWK = { kty: privateJwk.kty, n: privateJwk.n, e: privateJwk.e };
  return {
    kid: x5t,
    x5t,
    certificateDerBase64: certificateDer.toString('base64'),
    privateKey,
    privateJwk,
    publicKey: (await importJWK(publicJwk, 'RS256')) as CryptoKey,
    publicJwk,
  };
}

// ---------------------------------------------------------------- HTTP plumbing

const CACHEABLE = { 'Cache-Control': 'max-age=86400, private' };
const NOT_CACHEABLE = { 'Cache-Control': 'no-store, no-cache', Pragma: 'no-cache' };

class EntraError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly code: number,
    readonly description: string,
    /** Members Entra adds for errors a user can resolve: suberror, and claims for a claims challenge. */
    readonly details: { suberror?: string; claims?: string } = {},
  ) {
    super(`AADSTS${code}: ${description}`);
  }
}

function entraErrorBody(error: EntraError, correlationId: string): Record<string, unknown> {
  const traceId = randomUUID();
  const timestamp = new Date()
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
  return {
    error: error.error,
    error_description: `${error.message} Trace ID: ${traceId} Correlation ID: ${correlationId} Timestamp: ${timestamp}`,
    error_codes: [error.code],
    timestamp,
    trace_id: traceId,
    correlation_id: correlationId,
    error_uri: `https://login.microsoftonline.com/error?code=${error.code}`,
    ...error.details,
  };
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  response.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
  });
  response.end(payload);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_REQUEST_BODY_BYTES) {
      throw new EntraError(400, 'invalid_request', 9002313, 'Invalid request. Request is malformed or invalid. - The request body is too large.');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function listen(server: https.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(error.code === 'EADDRINUSE' ? new Error(`The identity provider cannot listen on ${host}:${port}: the port is in use.`, { cause: error }) : error);
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
