/**
 * The local stand-in for Entra ID over HTTPS (docs/local-stack.md): Entra's metadata, keys and token endpoint per
 * tenant, so that the real `jose` and `msal-node` code paths run. The one module the rest of the project imports.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { createLocalJWKSet } from 'jose';
import { close, keepIdleConnectionsOpen, listen, readBody, sendJson } from '../embedded-http.js';
import { v1Issuer, v2Issuer } from './entra-token.js';
import { accessTokenClaims, type TokenOptions } from './claims.js';
import { EntraError, entraErrorBody, malformedRequest } from './entra-error.js';
import { handleTokenRequest } from './grants.js';
import { MANAGED_IDENTITY_PATH, serveManagedIdentityToken, type ManagedIdentities } from './managed-identity.js';
import { ON_BEHALF_OF_GRANT_TYPE } from './on-behalf-of.js';
import type { FederatedIdentityCredential } from './token-request.js';
import { loadOrCreateSigner } from './signing.js';
import { loadOrCreateTlsCertificate, type TlsCertificate } from '../tls.js';

export { API_USER_SCOPE, DEFAULT_LOCAL_USERNAME, localUserObjectId, servicePrincipalObjectId, type TokenOptions } from './claims.js';
export { TOKEN_EXCHANGE_AUDIENCES } from './managed-identity.js';
export type { FederatedIdentityCredential } from './token-request.js';
export { GRAPH_APP_ID, GRAPH_RESOURCE } from './on-behalf-of.js';
export { localIdentityDataDir, readIdentityProviderInfo, writeIdentityProviderInfo, type IdentityProviderInfo } from './provider-info.js';

export interface IdentityProviderOptions {
  /** Default 0: a free port. */
  port?: number;
  /** Keeps the TLS certificate and the signing key across restarts; without it, both last until close(). */
  dataDir?: string;
  /** A TLS certificate for localhost shared with other local servers; then none is created. */
  tls?: TlsCertificate;
  /** Tenant ids served; any other gets Entra's invalid_tenant error. */
  tenants: string[];
  /** Application (client) id of the API: tokens default to the audience api://<clientId>. */
  clientId: string;
  /** The API's other App ID URIs (identifierUris, e.g. a Teams tab's `api://<host>/<clientId>`): tokens for them are issued and exchanged. */
  appIdUris?: string[];
  /** The local Function App's managed identities, whose tokens its managed identity endpoint gives (in the first tenant). */
  managedIdentities?: ManagedIdentities;
  /** The API's federated identity credentials, which `addFederatedIdentityCredential` adds to. */
  federatedIdentityCredentials?: FederatedIdentityCredential[];
}

export type IdentityProvider = Awaited<ReturnType<typeof startIdentityProvider>>;

// Paths below /{tenant}/, as Entra spells them.
const ENDPOINTS = new Map<string, { kind: 'metadata' | 'jwks' | 'token'; version: 1 | 2 }>([
  ['v2.0/.well-known/openid-configuration', { kind: 'metadata', version: 2 }],
  ['.well-known/openid-configuration', { kind: 'metadata', version: 1 }],
  ['discovery/v2.0/keys', { kind: 'jwks', version: 2 }],
  ['discovery/keys', { kind: 'jwks', version: 1 }],
  ['oauth2/v2.0/token', { kind: 'token', version: 2 }],
]);
const MAX_REQUEST_BODY_BYTES = 64 * 1024;
const CACHEABLE = { 'Cache-Control': 'max-age=86400, private' };
const NOT_CACHEABLE = { 'Cache-Control': 'no-store, no-cache', Pragma: 'no-cache' };

export async function startIdentityProvider(options: IdentityProviderOptions) {
  const tenants = new Set(options.tenants.map((tenant) => tenant.toLowerCase()));
  const clientId = options.clientId.toLowerCase();
  const audiences = [`api://${clientId}`, clientId, ...(options.appIdUris ?? []).map((uri) => uri.toLowerCase())];
  // Callers need the CA certificate in a file even when nothing is kept.
  const temporaryDir = options.tls || options.dataDir ? undefined : await mkdtemp(path.join(os.tmpdir(), 'local-identity-provider-'));
  const removeTemporaryDir = () => (temporaryDir ? rm(temporaryDir, { recursive: true, force: true }) : undefined);
  try {
    const tls = options.tls ?? (await loadOrCreateTlsCertificate(options.dataDir ?? temporaryDir!));
    const signer = await loadOrCreateSigner(options.dataDir);
    const keys = createLocalJWKSet({ keys: [signer.publicJwk] });
    const counts = { metadata: 0, jwks: 0, token: 0, onBehalfOf: 0 };
    const identityHeader = randomUUID();
    const managedIdentityTokens: { clientId: string; resource: string }[] = [];
    const federatedIdentityCredentials = [...(options.federatedIdentityCredentials ?? [])];
    let authorityHost = '';
    const issueToken = (tokenOptions: TokenOptions) => signer.sign(accessTokenClaims(tokenOptions, { authorityHost, clientId }));

    async function handleRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
      const url = new URL(request.url ?? '/', authorityHost);
      const { managedIdentities: identities } = options;
      if (identities && url.pathname === MANAGED_IDENTITY_PATH) {
        const issued = await serveManagedIdentityToken(request, response, { identities, header: identityHeader, tenantId: [...tenants][0]!, issueToken });
        return void (issued && managedIdentityTokens.push(issued));
      }
      const [, tenant = '', endpointPath = ''] = /^\/([^/]+)\/(.+)$/.exec(url.pathname) ?? [];
      const endpoint = ENDPOINTS.get(endpointPath);
      if (!endpoint) return sendJson(response, 404, { error: 'not_found', error_description: `No endpoint at ${request.method} ${url.pathname}.` });
      counts[endpoint.kind] += 1;
      const tenantId = tenant.toLowerCase();
      try {
        if (!tenants.has(tenantId)) {
          const description = `Tenant '${tenantId}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`;
          throw new EntraError('invalid_tenant', 90002, description);
        }
        if (endpoint.kind === 'token') {
          if (request.method !== 'POST') {
            throw new EntraError('invalid_request', 900561, `The endpoint only accepts POST requests. Received a ${request.method} request.`);
          }
          const form = new URLSearchParams(await readBody(request, MAX_REQUEST_BODY_BYTES, () => malformedRequest('The request body is too large.')));
          if (form.get('grant_type') === ON_BEHALF_OF_GRANT_TYPE) counts.onBehalfOf += 1;
          const context = { tenantId, clientId, audiences, authorityHost, keys, issueToken, federatedIdentityCredentials };
          return sendJson(response, 200, await handleTokenRequest(form, request.headers.authorization, context), NOT_CACHEABLE);
        }
        if (request.method !== 'GET') return sendJson(response, 405, { error: 'method_not_allowed', error_description: 'Use GET.' }, { Allow: 'GET' });
        // Like Entra, the v2 key set names the issuer the key signs for.
        const key = endpoint.version === 2 ? { ...signer.publicJwk, issuer: v2Issuer(authorityHost, tenantId) } : signer.publicJwk;
        const body = endpoint.kind === 'metadata' ? openIdConfiguration(authorityHost, tenantId, endpoint.version) : { keys: [key] };
        sendJson(response, 200, body, CACHEABLE);
      } catch (error) {
        if (!(error instanceof EntraError)) throw error;
        const correlationId = [request.headers['client-request-id']].flat()[0] ?? randomUUID();
        // As Entra answers: 401 for a client that failed to authenticate, 400 for any other error.
        sendJson(response, error.error === 'invalid_client' ? 401 : 400, entraErrorBody(error, correlationId), NOT_CACHEABLE);
      }
    }

    const server = keepIdleConnectionsOpen(
      https.createServer({ cert: tls.cert, key: tls.key }, (request, response) => {
        handleRequest(request, response).catch((error: unknown) => {
          console.error('identity provider: request failed', error);
          if (!response.headersSent) sendJson(response, 500, { error: 'server_error', error_description: String(error) });
        });
      }),
    );
    const port = await listen(server, options.port ?? 0, '127.0.0.1', 'identity provider');
    authorityHost = `https://localhost:${port}`;
    return {
      /** 'https://localhost:<port>' */
      authorityHost,
      port,
      /** The self-signed TLS certificate clients must trust, and its file (for NODE_EXTRA_CA_CERTS). */
      caCertPem: tls.cert,
      caCertPath: tls.certPath,
      signingKid: signer.kid,
      /** For tests that craft tokens the provider would never issue. */
      privateJwk: signer.privateJwk,
      /** Requests per endpoint; onBehalfOf counts the token requests of that grant, failed ones too. */
      counts,
      /** The key set, for the services that check its tokens. */
      keys: () => keys,
      /** IDENTITY_ENDPOINT and IDENTITY_HEADER of the local Function App, when it has managed identities. */
      managedIdentity: options.managedIdentities && { IDENTITY_ENDPOINT: `${authorityHost}${MANAGED_IDENTITY_PATH}`, IDENTITY_HEADER: identityHeader },
      /** The managed identity tokens issued: to which identity, for which resource. */
      managedIdentityTokens,
      /** Lets the API trust another issuer's tokens as its client assertion, as `az ad app federated-credential create` does. */
      addFederatedIdentityCredential(credential: FederatedIdentityCredential) {
        federatedIdentityCredentials.push(credential);
      },
      issueToken,
      async close() {
        await close(server);
        await removeTemporaryDir();
      },
    };
  } catch (error) {
    await removeTemporaryDir();
    throw error;
  }
}

/** Entra's OpenID configuration of a tenant, v1 or v2: the members OpenID Connect requires and msal-node reads. */
export function openIdConfiguration(authorityHost: string, tenantId: string, version: 1 | 2): Record<string, unknown> {
  const oauth2 = `${authorityHost}/${tenantId}/oauth2${version === 2 ? '/v2.0' : ''}`;
  return {
    issuer: version === 2 ? v2Issuer(authorityHost, tenantId) : v1Issuer(tenantId),
    authorization_endpoint: `${oauth2}/authorize`,
    token_endpoint: `${oauth2}/token`,
    end_session_endpoint: `${oauth2}/logout`,
    jwks_uri: `${authorityHost}/${tenantId}/discovery${version === 2 ? '/v2.0' : ''}/keys`,
    response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
    subject_types_supported: ['pairwise'],
    id_token_signing_alg_values_supported: ['RS256'],
    tenant_region_scope: 'NA',
    cloud_instance_name: 'microsoftonline.com',
  };
}
