/**
 * What the provider publishes per tenant on Entra's discovery paths: the v1 and v2 OpenID configuration
 * documents and the signing key as the JWKS lists it; and the v1 and v2 issuers those documents name, which
 * the tokens carry and the token endpoint checks assertions against.
 */
import type { JWK } from 'jose';
import type { SigningKey } from './signing.js';

export function openIdConfiguration(authorityHost: string, tenantId: string, version: 1 | 2): Record<string, unknown> {
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

export function publicSigningJwk(signingKey: SigningKey, authorityHost: string, tenantId: string, version: 1 | 2): JWK {
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

export function v1Issuer(tenantId: string): string {
  return `https://sts.windows.net/${tenantId}/`;
}

export function v2Issuer(authorityHost: string, tenantId: string): string {
  return `${authorityHost}/${tenantId}/v2.0`;
}
