/**
 * What the grants of the token endpoint share: the context a token request runs in (tenant, the API's
 * client id, signing key, issueToken), the shape of a successful answer, required parameters, and the scope
 * parameter read as the one resource it names and its scope names, with Entra's errors for a missing
 * parameter, an invalid scope and a resource the tenant does not know.
 */
import type { TokenOptions } from './claims.js';
import { EntraError } from './entra-error.js';
import type { SigningKey } from './signing.js';

const OPENID_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);

export interface TokenEndpointContext {
  tenantId: string;
  /** The API's client id. */
  clientId: string;
  authorityHost: string;
  signingKey: SigningKey;
  issueToken(options: TokenOptions): Promise<string>;
}

export interface TokenResponse {
  token_type: 'Bearer';
  scope: string;
  expires_in: number;
  ext_expires_in: number;
  access_token: string;
  id_token?: string;
  client_info?: string;
}

export function requiredParameter(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (!value) {
    throw new EntraError(400, 'invalid_request', 900144, `The request body must contain the following parameter: '${name}'.`);
  }
  return value;
}

/** Scopes of the one resource a token request may name, without the OpenID Connect scopes. */
export function requestedScopes(scopeParameter: string): { resource: string; names: string[] } {
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

export function apiAudiences(clientId: string): string[] {
  return [`api://${clientId}`, clientId];
}

export function invalidScope(scopeParameter: string): EntraError {
  return new EntraError(
    400,
    'invalid_scope',
    70011,
    `The provided request must include a 'scope' input parameter. The provided value for the input parameter ` +
      `'scope' is not valid. The scope ${scopeParameter} is not valid.`,
  );
}

export function unknownResource(resource: string, tenantId: string): EntraError {
  return new EntraError(
    400,
    'invalid_resource',
    500011,
    `The resource principal named ${resource} was not found in the tenant named ${tenantId}. This can happen ` +
      `if the application has not been installed by the administrator of the tenant or consented to by any user ` +
      `in the tenant. You might have sent your authentication request to the wrong tenant.`,
  );
}
