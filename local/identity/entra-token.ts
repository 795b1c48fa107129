/**
 * The checks Entra's services make of an access token of the local identity provider (signature and lifetime
 * by jose, tenant, issuer, audience), for the Graph stand-in and On-Behalf-Of to answer in their own words.
 */
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type ProtectedHeaderParameters } from 'jose';
import { GUID } from '../defaults.js';

export const v1Issuer = (tenantId: string): string => `https://sts.windows.net/${tenantId}/`;
export const v2Issuer = (authorityHost: string, tenantId: string): string => `${authorityHost}/${tenantId}/v2.0`;

/** In the order checked. */
export type TokenProblem = 'malformed' | 'tenant' | 'key' | 'signature' | 'lifetime' | 'issuer' | 'audience';

export class TokenCheckFailed extends Error {
  constructor(
    readonly problem: TokenProblem,
    /** The token's claims and header, unverified, once it could be decoded. */
    readonly claims: JWTPayload = {},
    readonly header: ProtectedHeaderParameters = {},
  ) {
    super(`The token failed its ${problem} check`);
  }
}

export interface ExpectedToken {
  /** The provider's signing keys, for the token's tenant. */
  keys(tenantId: string): JWTVerifyGetKey;
  authorityHost: string;
  /** Accepted audiences, in lower case. */
  audiences: string[];
  /** The one tenant accepted; any tenant when left out. */
  tenantId?: string;
  clockToleranceSeconds?: number;
}

/** A JWT's claims and header, not verified; `malformed()` is thrown for what is not a JWT. */
export function decodedJwt(token: string, malformed: () => Error): { claims: JWTPayload; header: ProtectedHeaderParameters } {
  try {
    return { claims: decodeJwt(token), header: decodeProtectedHeader(token) };
  } catch {
    throw malformed();
  }
}

export async function checkEntraToken(token: string, expected: ExpectedToken): Promise<{ claims: JWTPayload; tenantId: string }> {
  const { claims, header } = decodedJwt(token, () => new TokenCheckFailed('malformed'));
  const failed = (problem: TokenProblem) => new TokenCheckFailed(problem, claims, header);
  const tenantId = typeof claims.tid === 'string' ? claims.tid.toLowerCase() : '';
  if (!GUID.test(tenantId) || (expected.tenantId !== undefined && tenantId !== expected.tenantId)) throw failed('tenant');
  try {
    await jwtVerify(token, expected.keys(tenantId), { algorithms: ['RS256'], clockTolerance: expected.clockToleranceSeconds ?? 0 });
  } catch (error) {
    if (error instanceof errors.JWKSNoMatchingKey) throw failed('key');
    if (error instanceof errors.JWTExpired || (error instanceof errors.JWTClaimValidationFailed && error.claim === 'nbf')) {
      throw failed('lifetime');
    }
    throw failed(error instanceof errors.JWSSignatureVerificationFailed ? 'signature' : 'malformed');
  }
  if (![v1Issuer(tenantId), v2Issuer(expected.authorityHost, tenantId)].includes(String(claims.iss))) throw failed('issuer');
  if (typeof claims.aud !== 'string' || !expected.audiences.includes(claims.aud.toLowerCase())) throw failed('audience');
  return { claims, tenantId };
}
