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
 *
 * oauth2-mock-server keeps the signing key, publishes it and signs every token (identity-provider/signing.ts).
 * Its own endpoints do not fit Entra's: one issuer at fixed paths with a generic discovery document, where
 * Entra has an issuer and paths per tenant and version and answers with AADSTS errors. So this module is the
 * HTTPS server on Entra's paths, serving the OpenID metadata and the key set itself and the token endpoint
 * through identity-provider/: token-request.ts for the form, grants.ts and on-behalf-of.ts for the grants, claims.ts for Entra's
 * claim shapes, entra-error.ts for its errors. It is the one module the rest of the project imports.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { createLocalJWKSet, type JWK } from 'jose';
import { close, listen, readBody, sendJson } from './embedded-http.js';
import { v1Issuer, v2Issuer } from './entra-token.js';
import { keepIdleConnectionsOpen } from './idle-connections.js';
import { signAccessToken, type TokenOptions } from './identity-provider/claims.js';
import { EntraError, entraErrorBody, malformedRequest } from './identity-provider/entra-error.js';
import { ON_BEHALF_OF_GRANT_TYPE } from './identity-provider/on-behalf-of.js';
import { loadOrCreateSigner } from './identity-provider/signing.js';
import { handleTokenRequest } from './identity-provider/grants.js';
import { loadOrCreateTlsCertificate, type TlsCertificate } from './tls.js';

export type { TlsCertificate };
export { API_USER_SCOPE, DEFAULT_LOCAL_USERNAME, localUserObjectId, type TokenOptions } from './identity-provider/claims.js';
export { GRAPH_APP_ID, GRAPH_CONSENTED_SCOPES, GRAPH_RESOURCE, NEEDS_CONSENT_USER_PREFIX, NEEDS_MFA_USER_PREFIX } from './identity-provider/on-behalf-of.js';
export { localIdentityDataDir, readIdentityProviderInfo, writeIdentityProviderInfo, type IdentityProviderInfo } from './identity-provider/provider-info.js';

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

type Endpoint = { kind: 'metadata' | 'jwks'; method: 'GET'; version: 1 | 2 } | { kind: 'token'; method: 'POST' };

// Paths below /{tenant}/, as Entra spells them.
const ENDPOINTS = new Map<string, Endpoint>([
  ['v2.0/.well-known/openid-configuration', { kind: 'metadata', method: 'GET', version: 2 }],
  ['.well-known/openid-configuration', { kind: 'metadata', method: 'GET', version: 1 }],
  ['discovery/v2.0/keys', { kind: 'jwks', method: 'GET', version: 2 }],
  ['discovery/keys', { kind: 'jwks', method: 'GET', version: 1 }],
  ['oauth2/v2.0/token', { kind: 'token', method: 'POST' }],
]);

const MAX_REQUEST_BODY_BYTES = 64 * 1024;
const CACHEABLE = { 'Cache-Control': 'max-age=86400, private' };
const NOT_CACHEABLE = { 'Cache-Control': 'no-store, no-cache', Pragma: 'no-cache' };

export async function startIdentityProvider(options: IdentityProviderOptions): Promise<IdentityProvider> {
  const tenants = new Set(options.tenants.map((tenant) => tenant.toLowerCase()));
  const clientId = options.clientId.toLowerCase();
  // Callers need the CA certificate in a file even when nothing is kept.
  const temporaryDir = options.tls || options.dataDir ? undefined : await mkdtemp(path.join(os.tmpdir(), 'local-identity-provider-'));
  try {
    const tls = options.tls ?? (await loadOrCreateTlsCertificate(options.dataDir ?? temporaryDir!));
    const signer = await loadOrCreateSigner(options.dataDir);
    const keys = createLocalJWKSet({ keys: [signer.publicJwk] });

    const counts = { metadata: 0, jwks: 0, token: 0, onBehalfOf: 0 };
    let authorityHost = '';
    const issueToken = (tokenOptions: TokenOptions) => signAccessToken(tokenOptions, { authorityHost, clientId, signer });

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
        if (endpoint.kind === 'metadata') {
          sendJson(response, 200, openIdConfiguration(authorityHost, tenantId, endpoint.version), CACHEABLE);
        } else if (endpoint.kind === 'jwks') {
          // Like Entra, the v2 key set names the issuer the key signs for.
          const key = endpoint.version === 2 ? { ...signer.publicJwk, issuer: v2Issuer(authorityHost, tenantId) } : signer.publicJwk;
          sendJson(response, 200, { keys: [key] }, CACHEABLE);
        } else {
          const tooLarge = () => malformedRequest('The request body is too large.');
          const form = new URLSearchParams(await readBody(request, MAX_REQUEST_BODY_BYTES, tooLarge));
          if (form.get('grant_type') === ON_BEHALF_OF_GRANT_TYPE) counts.onBehalfOf += 1;
          const context = { tenantId, clientId, authorityHost, signer, keys, issueToken };
          sendJson(response, 200, await handleTokenRequest(form, request.headers.authorization, context), NOT_CACHEABLE);
        }
      } catch (error) {
        if (!(error instanceof EntraError)) throw error;
        const correlationId = [request.headers['client-request-id']].flat()[0] ?? randomUUID();
        sendJson(response, error.status, entraErrorBody(error, correlationId), NOT_CACHEABLE);
      }
    }

    const port = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1', 'identity provider');
    authorityHost = `https://localhost:${port}`;

    return {
      authorityHost,
      port,
      caCertPem: tls.cert,
      caCertPath: tls.certPath,
      signingKid: signer.kid,
      privateJwk: signer.privateJwk,
      counts,
      issueToken,
      async close() {
        await close(server);
        if (temporaryDir) await rm(temporaryDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (temporaryDir) await rm(temporaryDir, { recursive: true, force: true });
    throw error;
  }
}

/** Entra's OpenID configuration of a tenant, v1 or v2, with the members Entra's have. */
export function openIdConfiguration(authorityHost: string, tenantId: string, version: 1 | 2): Record<string, unknown> {
  const base = `${authorityHost}/${tenantId}`;
  const list = (names: string) => names.split(' ');
  const common = {
    token_endpoint_auth_methods_supported: list('client_secret_post private_key_jwt client_secret_basic'),
    response_modes_supported: list('query fragment form_post'),
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
  const claims = 'sub iss cloud_instance_name cloud_instance_host_name cloud_graph_host_name msgraph_host aud exp iat auth_time acr nonce';
  if (version === 2) {
    return {
      ...common,
      token_endpoint: `${base}/oauth2/v2.0/token`,
      jwks_uri: `${base}/discovery/v2.0/keys`,
      response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
      scopes_supported: list('openid profile email offline_access'),
      issuer: v2Issuer(authorityHost, tenantId),
      request_uri_parameter_supported: false,
      authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
      end_session_endpoint: `${base}/oauth2/v2.0/logout`,
      claims_supported: list(`${claims} preferred_username name tid ver at_hash c_hash email`),
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
    claims_supported: list(`${claims} amr email given_name family_name nickname`),
  };
}
