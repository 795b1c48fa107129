import type { HttpRequest } from '@azure/functions';
import { authSettings } from '../config.js';
import { ApiError } from '../errors.js';
import type { Principal } from './principal.js';
import { allows, type Permission } from './roles.js';
import { createTokenValidator, invalidToken, type TokenValidator } from './token-validator.js';

let validator: TokenValidator | undefined;

/** One validator per process, so each tenant's metadata and key set are fetched once and shared. */
function tokenValidator(): TokenValidator {
  validator ??= createTokenValidator(authSettings());
  return validator;
}

// RFC 6750's URI query parameter: a token there ends up in logs and histories, so it is refused outright.
const QUERY_TOKEN_PARAMETER = 'access_token';

export async function authenticate(request: HttpRequest): Promise<Principal> {
  const validate = tokenValidator().validate;
  if (request.query.has(QUERY_TOKEN_PARAMETER)) throw invalidToken('tokenInQuery');
  const header = request.headers.get('authorization');
  const match = header ? /^Bearer +(\S+) *$/i.exec(header) : null;
  if (!match) throw invalidToken(header ? 'tokenInvalid' : 'tokenMissing');
  return validate(match[1]!);
}

export function authorize(principal: Principal, permission: Permission): void {
  if (!allows(principal.roles, permission)) throw new ApiError(403, 'forbidden', { permission });
}
