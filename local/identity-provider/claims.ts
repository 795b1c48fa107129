/**
 * The access tokens the provider issues, with the claims Entra puts in v1 and v2 tokens: the common ones
 * (aud, iss, lifetime, tid, ver, roles), an app's (appid/azp, idtyp, the service principal's oid) or a user's
 * (name, oid, pairwise sub, scp, upn or preferred_username); TokenOptions says what to issue and its defaults
 * (DEFAULT_LOCAL_USERNAME, API_USER_SCOPE). Also the object ids derived from tenant and name, so a user keeps
 * its oid across runs, and the pairwise sub and opaque ids the id token shares.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { v1Issuer, v2Issuer } from '../entra-token.js';
import type { Signer } from './signing.js';

export const DEFAULT_LOCAL_USERNAME = 'dev@contoso.test';
/** The delegated scope the API exposes. */
export const API_USER_SCOPE = 'access_as_user';
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 3600;

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

interface SigningContext {
  authorityHost: string;
  clientId: string;
  signer: Signer;
}

export async function signAccessToken(options: TokenOptions, context: SigningContext): Promise<string> {
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

  return context.signer.sign({ ...common, ...subject, ...options.extraClaims });
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
export function pairwiseSubject(tenantId: string, oid: string, clientAppId: string): string {
  return createHash('sha256').update(`${tenantId}\n${oid}\n${clientAppId.toLowerCase()}`).digest('base64url');
}

/** A UUID that depends only on its inputs, laid out as a name-based (version 5) UUID. */
function deterministicUuid(...parts: string[]): string {
  const bytes = createHash('sha256').update(parts.join('\n')).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function opaqueId(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}
