import { z } from 'zod';
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { AuthSettings } from '../settings/read.js';
import { BoundedMap } from '../lib/bounded-map.js';
import { ApiError, DependencyUnavailableError } from '../errors.js';
import { lazily } from '../lib/lazy.js';
import { readBefore } from '../lib/read-before.js';
import { translate, type MessageKey } from '../messages/catalog.js';
import { settleAll } from '../lib/settle-all.js';
import type { Principal } from './principal.js';
import { isRole, type Role } from '../roles.js';

const MAX_TOKEN_LENGTH = 16 * 1024;
export const CLOCK_SKEW_SECONDS = 300;
const REQUIRED_SCOPE = 'access_as_user';
const METADATA_TIMEOUT_MS = 5_000;
/** Tokens remembered as validated, the most recently validated kept. */
const VALIDATED_TOKENS = 10_000;
/**
 * How long a validated token is taken again without checking its signature: no longer than jose
 * keeps a tenant's key set before it looks again (10 minutes), so a key withdrawn stops being
 * trusted as soon as it would have been; never past the token's own expiry.
 */
const REVALIDATE_AFTER_MS = 10 * 60_000;

interface TenantKeys {
  issuers: { v1: string; v2: string };
  keySet: ReturnType<typeof createRemoteJWKSet>;
}

export function invalidToken(messageKey: MessageKey = 'tokenInvalid'): ApiError {
  return new ApiError(401, messageKey, {}, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });
}

/** Why a token with a good signature is refused, as its 401 says (see refusedBecause). */
export const TOKEN_REFUSAL_REASONS = ['tokenExpired', 'tokenNotYetValid', 'tokenWrongAudience', 'tokenWrongIssuer', 'tokenIsIdToken'] as const;
type Reason = (typeof TOKEN_REFUSAL_REASONS)[number];

/**
 * A token whose signature is good, refused for a reason its holder can read in it anyway: the message says which, and so
 * does the challenge's error_description (RFC 6750 3; always English, as the header is ASCII). Never for a token whose
 * signature failed, so a forger learns nothing, nor which tenants are allowed.
 */
function refusedBecause(reason: Reason): ApiError {
  const params = { skewMinutes: CLOCK_SKEW_SECONDS / 60 };
  const challenge = `Bearer error="invalid_token", error_description="${translate(reason, 'en', params)}"`;
  return new ApiError(401, reason, params, { headers: { 'WWW-Authenticate': challenge } });
}

/** The claims jose checks, after the signature, whose failure is a reason to give. */
const CLAIM_REASONS = new Map<string, Reason>([
  ['exp', 'tokenExpired'],
  ['nbf', 'tokenNotYetValid'],
  ['aud', 'tokenWrongAudience'],
  ['iss', 'tokenWrongIssuer'],
]);

function refusal(error: unknown): ApiError {
  // JWTExpired is not a JWTClaimValidationFailed in jose 6, though it has the same claim and reason.
  const failed = error instanceof errors.JWTClaimValidationFailed || error instanceof errors.JWTExpired ? error : undefined;
  const reason = failed?.reason === 'check_failed' ? CLAIM_REASONS.get(failed.claim) : undefined;
  return reason ? refusedBecause(reason) : invalidToken();
}

/** A valid user token without the delegated permission users call the API with: a 403 naming the scope to ask for (RFC 6750). */
function insufficientScope(clientId: string): ApiError {
  const challenge = `Bearer error="insufficient_scope", scope="api://${clientId}/${REQUIRED_SCOPE}"`;
  return new ApiError(403, 'scopeMissing', {}, { headers: { 'WWW-Authenticate': challenge } });
}

async function fetchMetadata(url: string): Promise<{ issuer: string; jwks_uri: string }> {
  // One deadline for the answer, its body included.
  const signal = AbortSignal.timeout(METADATA_TIMEOUT_MS);
  const response = await fetch(url, { signal, redirect: 'error' });
  if (!response.ok) throw new Error(`OpenID metadata ${url} answered ${response.status}`);
  const metadata = (await readBefore(signal, response.json())) as { issuer?: unknown; jwks_uri?: unknown };
  if (typeof metadata.issuer !== 'string' || typeof metadata.jwks_uri !== 'string') {
    throw new Error(`OpenID metadata ${url} has no issuer or jwks_uri`);
  }
  return { issuer: metadata.issuer, jwks_uri: metadata.jwks_uri };
}

/** Errors that mean the identity provider could not be asked, not that the token is bad. */
function isKeyRetrievalFailure(error: unknown): boolean {
  if (!(error instanceof errors.JOSEError)) return true;
  return error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid || error.code === 'ERR_JOSE_GENERIC';
}

/**
 * The key a token names (`kid`), from the tenant's key set. Entra always names it; jose would verify a token naming none
 * with the only key of a set that holds one, and refuse it with a set of several (Entra's): refused either way.
 */
function namedKey(keySet: TenantKeys['keySet']): JWTVerifyGetKey {
  return (header, token) => {
    if (typeof header.kid !== 'string') throw new errors.JWKSNoMatchingKey();
    return keySet(header, token);
  };
}

/** A JSON segment of a compact JWS, or undefined when it is not JSON. */
function segmentJson(segment: string): unknown {
  try {
    return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** A member of a decoded segment, whatever JSON value the segment turned out to be. */
const claim = (json: unknown, name: string): unknown => (typeof json === 'object' && json !== null ? (json as Record<string, unknown>)[name] : undefined);

function stringClaim(payload: JWTPayload, name: string): string | undefined {
  const value = payload[name];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/**
 * Validates Entra ID access tokens: RS256 signatures against each allowed tenant's published keys,
 * issuer (v1 and v2), audience, lifetime, and the scope or roles that make a caller.
 * One instance per process: it keeps each tenant's metadata and key set.
 */
export function createTokenValidator(settings: AuthSettings) {
  async function discover(tenantId: string): Promise<TenantKeys> {
    const base = `${settings.authorityHost}/${tenantId}`;
    // Both settle before the request goes on or fails: no fetch is left running after the answer.
    const [v2, v1] = await settleAll([
      fetchMetadata(`${base}/v2.0/.well-known/openid-configuration`),
      fetchMetadata(`${base}/.well-known/openid-configuration`),
    ]);
    return { issuers: { v1: v1.issuer, v2: v2.issuer }, keySet: createRemoteJWKSet(new URL(v2.jwks_uri), { timeoutDuration: METADATA_TIMEOUT_MS }) };
  }

  /** Each allowed tenant's issuers and key set, discovered when its first token arrives. */
  const tenants = new Map(settings.allowedTenants.map((tenantId) => [tenantId, lazily(() => discover(tenantId))]));

  function tenantOf(token: string): string {
    // Read before verification only to choose which allowed tenant's keys to verify with. The token's
    // shape was checked, so the segment is base64url; jwtVerify decodes it again, strictly, and
    // refuses any algorithm but RS256 before it asks for a key.
    const tid = claim(segmentJson(token.slice(token.indexOf('.') + 1, token.lastIndexOf('.'))), 'tid');
    if (typeof tid !== 'string' || !tenants.has(tid)) throw invalidToken();
    return tid;
  }

  function rolesOf(payload: JWTPayload, kind: Principal['kind']): Role[] {
    const claimed = Array.isArray(payload.roles) ? payload.roles.filter(isRole) : [];
    if (claimed.length === 0 && kind === 'user' && settings.defaultRole) return [settings.defaultRole];
    return [...new Set(claimed)];
  }

  /** Each token validated, and until when it is taken again as it is: the same caller's next requests cost no signature check. */
  const validated = new BoundedMap<string, { principal: Principal; until: number }>(VALIDATED_TOKENS);

  async function validate(token: string): Promise<Principal> {
    const known = validated.get(token);
    if (known && Date.now() < known.until) return known.principal;
    const { principal, expiresAt } = await validateAnew(token);
    validated.set(token, { principal, until: Math.min(Date.now() + REVALIDATE_AFTER_MS, expiresAt) });
    return principal;
  }

  /** The caller the token makes, checked through, and when jose would stop taking it (its expiry and the clock skew). */
  async function validateAnew(token: string): Promise<{ principal: Principal; expiresAt: number }> {
    if (token.length > MAX_TOKEN_LENGTH || !/^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)) throw invalidToken();
    const tenantId = tenantOf(token);
    let keys: TenantKeys;
    try {
      keys = await tenants.get(tenantId)!();
    } catch (error) {
      throw new DependencyUnavailableError('identityProvider', error);
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, namedKey(keys.keySet), {
        algorithms: ['RS256'],
        issuer: [keys.issuers.v1, keys.issuers.v2],
        audience: settings.audiences,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ['exp', 'tid', 'oid'],
      }));
    } catch (error) {
      if (isKeyRetrievalFailure(error)) throw new DependencyUnavailableError('identityProvider', error);
      throw refusal(error);
    }
    // The token version decides which issuer form is legitimate; a mix is a forgery or a misconfiguration.
    const expectedIssuer = payload.ver === '1.0' ? keys.issuers.v1 : payload.ver === '2.0' ? keys.issuers.v2 : undefined;
    if (payload.iss !== expectedIssuer) throw refusedBecause('tokenWrongIssuer');
    if (payload.tid !== tenantId) throw invalidToken();
    // An access token names the client app that asked for it (v1 `appid`, v2 `azp`). An ID token names none: issued to a
    // client app signing in with the API's client id (an add-in), signed with the same keys, it would pass as an app token.
    if (!stringClaim(payload, payload.ver === '1.0' ? 'appid' : 'azp')) throw refusedBecause('tokenIsIdToken');
    if (payload.nbf === undefined && payload.iat === undefined) throw invalidToken();
    // jose checks `iat` only for a maximum age: a token issued in the future is refused here.
    if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) throw refusedBecause('tokenNotYetValid');
    const objectId = stringClaim(payload, 'oid');
    if (!objectId || !z.regexes.guid.test(objectId)) throw invalidToken();

    const scopes = stringClaim(payload, 'scp');
    const kind: Principal['kind'] = payload.idtyp === 'app' || scopes === undefined ? 'app' : 'user';
    if (kind === 'user' && !scopes!.split(' ').includes(REQUIRED_SCOPE)) throw insufficientScope(settings.clientId);

    const principal: Principal = {
      tenantId,
      objectId: objectId.toLowerCase(),
      kind,
      roles: Object.freeze(rolesOf(payload, kind)) as Role[],
      email:
        kind === 'user'
          ? (stringClaim(payload, 'preferred_username') ?? stringClaim(payload, 'upn') ?? stringClaim(payload, 'email'))?.toLowerCase()
          : undefined,
      displayName: stringClaim(payload, 'name'),
      accessToken: token,
    };
    // One principal for all the token's requests: none may change it.
    return { principal: Object.freeze(principal), expiresAt: (payload.exp! + CLOCK_SKEW_SECONDS) * 1000 };
  }

  return { validate };
}

export type TokenValidator = ReturnType<typeof createTokenValidator>;
