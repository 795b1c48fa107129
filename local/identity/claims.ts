/**
 * The claims of the tokens the provider issues, as Entra puts them in v1 and v2 access tokens of users and apps, and
 * the object ids derived from tenant and name, so that a user keeps its oid across runs.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { v1Issuer, v2Issuer } from './entra-token.js';

export const DEFAULT_LOCAL_USERNAME = 'dev@contoso.test';
/** The delegated scope the API exposes. */
export const API_USER_SCOPE = 'access_as_user';
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 3600;

export interface TokenOptions {
  /** Not checked against the served tenants, so tests can mint tokens of foreign tenants. */
  tenantId: string;
  kind: 'user' | 'app';
  roles?: string[];
  /** Default DEFAULT_LOCAL_USERNAME. */
  username?: string;
  /** Default: the part of the user name before '@'. */
  name?: string;
  /** Default: derived from tenant and user name (users) or tenant and client (apps). */
  oid?: string;
  /** Default 1. */
  version?: 1 | 2;
  /** The `scp` of user tokens. Default [API_USER_SCOPE]. */
  scopes?: string[];
  /** Default: api://<clientId> for v1, <clientId> for v2. */
  audience?: string;
  /** Application the token is issued to (appid/azp). Default: the API. */
  clientAppId?: string;
  /** How it authenticated (appidacr/azpacr): '0' public client, '1' secret, '2' certificate. Default '0' for users, '1' for apps. */
  clientAuthentication?: '0' | '1' | '2';
  expiresInSeconds?: number;
  /** Added last, so they can override any claim. */
  extraClaims?: Record<string, unknown>;
}

export function accessTokenClaims(options: TokenOptions, context: { authorityHost: string; clientId: string }): JWTPayload {
  const version = options.version ?? 1;
  const tenantId = options.tenantId.toLowerCase();
  const clientAppId = options.clientAppId ?? context.clientId;
  const clientAuthentication = options.clientAuthentication ?? (options.kind === 'app' ? '1' : '0');
  const client = version === 1 ? { appid: clientAppId, appidacr: clientAuthentication } : { azp: clientAppId, azpacr: clientAuthentication };
  const issuedAt = Math.floor(Date.now() / 1000);
  const roles = options.roles ?? [];
  let subject: JWTPayload;
  if (options.kind === 'app') {
    // The oid of an app-only token is the object id of the client's service principal in the tenant.
    const oid = options.oid ?? servicePrincipalObjectId(tenantId, clientAppId);
    subject = { ...client, ...(version === 1 ? { idp: v1Issuer(tenantId) } : {}), idtyp: 'app', oid, sub: oid };
  } else {
    const username = options.username ?? DEFAULT_LOCAL_USERNAME;
    const oid = options.oid ?? localUserObjectId(tenantId, username);
    const scopes = options.scopes ?? [API_USER_SCOPE];
    subject = {
      ...client,
      name: options.name ?? username.split('@')[0],
      oid,
      // Pairwise: the same user has a different sub in each application.
      sub: createHash('sha256').update(`${tenantId}\n${oid}\n${clientAppId.toLowerCase()}`).digest('base64url'),
      ...(scopes.length > 0 ? { scp: scopes.join(' ') } : {}),
      ...(version === 1 ? { acr: '1', amr: ['pwd'], unique_name: username, upn: username } : { preferred_username: username }),
    };
  }
  return {
    aud: options.audience ?? (version === 1 ? `api://${context.clientId}` : context.clientId),
    iss: version === 1 ? v1Issuer(tenantId) : v2Issuer(context.authorityHost, tenantId),
    iat: issuedAt,
    nbf: issuedAt,
    exp: issuedAt + (options.expiresInSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS),
    aio: randomBytes(48).toString('base64url'),
    tid: tenantId,
    uti: randomBytes(16).toString('base64url'),
    ver: version === 1 ? '1.0' : '2.0',
    ...(roles.length > 0 ? { roles } : {}),
    ...subject,
    ...options.extraClaims,
  };
}

/** The object id of an app's service principal (or a managed identity's) in a tenant, as its app-only tokens carry it. */
export function servicePrincipalObjectId(tenantId: string, clientId: string): string {
  return deterministicUuid('service-principal', tenantId.toLowerCase(), clientId.toLowerCase());
}

/** The object id the provider gives a user name in a tenant, unless a token request names another. */
export function localUserObjectId(tenantId: string, username: string): string {
  return deterministicUuid('user', tenantId.toLowerCase(), username.toLowerCase());
}

/** A UUID that depends only on its inputs, laid out as a name-based (version 5) UUID. */
function deterministicUuid(...parts: string[]): string {
  const bytes = createHash('sha256').update(parts.join('\n')).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  return bytes.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');
}
