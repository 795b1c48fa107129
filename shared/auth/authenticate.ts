import type { HttpRequest } from '@azure/functions';
import { authSettings } from '../settings/read.js';
import { ApiError } from '../errors.js';
import type { Principal } from './principal.js';
import { allows, type Permission } from '../roles.js';
import { createTokenValidator, invalidToken, type TokenValidator } from './token-validator.js';

let validator: TokenValidator | undefined;

/** One validator per process, so each tenant's metadata and key set are fetched once and shared. */
function tokenValidator(): TokenValidator {
  validator ??= createTokenValidator(authSettings());
  return validator;
}

// RFC 6750's URI query parameter: a token there ends up in logs and histories, so it is refused outright.
const QUERY_TOKEN_PARAMETER = 'access_token';

const SPACE = 0x20;

/**
 * The credentials of `Authorization: Bearer <token>` (RFC 6750 2.1; the scheme in any case, spaces
 * before the token), or '' when there are none. Read by index, not by a pattern: the token is long, and
 * the validator checks its every character anyway. Spaces after it are gone already: `Headers` trims
 * every value.
 */
function bearerCredentials(header: string): string {
  if (header.slice(0, 6).toLowerCase() !== 'bearer' || header.charCodeAt(6) !== SPACE) return '';
  let start = 7;
  while (header.charCodeAt(start) === SPACE) start++;
  return header.slice(start);
}

export async function authenticate(request: HttpRequest): Promise<Principal> {
  const validate = tokenValidator().validate;
  if (request.query.has(QUERY_TOKEN_PARAMETER)) throw invalidToken('tokenInQuery');
  const header = request.headers.get('authorization');
  const token = header ? bearerCredentials(header) : '';
  if (!token) throw invalidToken(header ? 'tokenInvalid' : 'tokenMissing');
  return validate(token);
}

export function authorize(principal: Principal, permission: Permission): void {
  if (!allows(principal.roles, permission)) throw new ApiError(403, 'forbidden', { permission });
}
