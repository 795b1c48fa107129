/**
 * The token endpoint's form: client credentials, the LOCAL DEVELOPMENT EXTENSION fields (roles,
 * token_version, name, oid, expires_in), and the grant it asks for: client_credentials (an app token for the
 * API's `.default`) and password (a user token with the API scopes asked for) are answered here, jwt-bearer
 * goes to on-behalf-of.ts, any other grant is Entra's unsupported_grant_type.
 */
import { GUID } from '../../shared/guid.js';
import { API_USER_SCOPE, DEFAULT_TOKEN_LIFETIME_SECONDS, type TokenOptions } from './claims.js';
import { authenticateClient, clientCredentials } from './client-authentication.js';
import { EntraError } from './entra-error.js';
import { ON_BEHALF_OF_GRANT_TYPE, onBehalfOf } from './on-behalf-of.js';
import { apiAudiences, requestedScopes, requiredParameter, unknownResource, type TokenEndpointContext, type TokenResponse } from './token-request.js';

export async function handleTokenRequest(
  form: URLSearchParams,
  authorizationHeader: string | undefined,
  context: TokenEndpointContext,
): Promise<TokenResponse> {
  const grantType = requiredParameter(form, 'grant_type');
  const client = clientCredentials(form, authorizationHeader);
  const extension = localExtension(form);
  const lifetime = extension.expiresInSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
  const sharedTokenOptions = {
    tenantId: context.tenantId,
    clientAppId: client.id,
    roles: extension.roles,
    version: extension.version,
    oid: extension.oid,
    expiresInSeconds: lifetime,
  };

  let tokenOptions: TokenOptions;
  let grantedScope: string;
  switch (grantType) {
    case 'client_credentials': {
      const clientAuthentication = authenticateClient(client, context);
      const scope = requiredParameter(form, 'scope');
      const requested = requestedApiScopes(scope, context);
      if (requested.names.length !== 1 || requested.names[0] !== '.default') {
        throw new EntraError(
          400,
          'invalid_scope',
          1002012,
          `The provided value for scope ${scope} is not valid. Client credential flows must have a scope value with ` +
            `/.default suffixed to the resource identifier (application ID URI).`,
        );
      }
      tokenOptions = {
        ...sharedTokenOptions,
        kind: 'app',
        audience: audienceFor(requested.resource, extension.version),
        clientAuthentication,
      };
      grantedScope = `${requested.resource}/.default`;
      break;
    }
    case 'password': {
      const username = requiredParameter(form, 'username');
      requiredParameter(form, 'password');
      const requested = requestedApiScopes(requiredParameter(form, 'scope'), context);
      // '.default' asks for every scope consented to, and the API exposes just one.
      const scopes = requested.names.includes('.default') ? [API_USER_SCOPE] : requested.names;
      tokenOptions = {
        ...sharedTokenOptions,
        kind: 'user',
        username,
        name: extension.name,
        scopes,
        audience: audienceFor(requested.resource, extension.version),
      };
      grantedScope = scopes.map((name) => `${requested.resource}/${name}`).join(' ');
      break;
    }
    case ON_BEHALF_OF_GRANT_TYPE:
      return onBehalfOf(form, client, lifetime, context);
    default:
      throw new EntraError(400, 'unsupported_grant_type', 70003, `The app requested an unsupported grant type '${grantType}'.`);
  }

  return {
    token_type: 'Bearer',
    scope: grantedScope,
    expires_in: lifetime,
    ext_expires_in: lifetime,
    access_token: await context.issueToken(tokenOptions),
  };
}

/** Entra puts the resource as requested (app ID URI or client id) in the aud of v1 tokens; v2 always has the client id. */
function audienceFor(resource: string, version: 1 | 2 | undefined): string | undefined {
  return (version ?? 1) === 1 ? resource : undefined;
}

function requestedApiScopes(scopeParameter: string, context: TokenEndpointContext): { resource: string; names: string[] } {
  const requested = requestedScopes(scopeParameter);
  if (!apiAudiences(context.clientId).includes(requested.resource.toLowerCase())) {
    throw unknownResource(requested.resource, context.tenantId);
  }
  return requested;
}

interface LocalExtension {
  roles?: string[];
  version?: 1 | 2;
  name?: string;
  oid?: string;
  expiresInSeconds?: number;
}

function localExtension(form: URLSearchParams): LocalExtension {
  const malformed = (detail: string) => new EntraError(400, 'invalid_request', 9002313, `Invalid request. Request is malformed or invalid. - ${detail}`);
  const extension: LocalExtension = {};

  const roles = form.get('roles');
  if (roles) extension.roles = roles.split(/[\s,]+/).filter(Boolean);

  const version = form.get('token_version');
  if (version) {
    if (version !== '1' && version !== '2') throw malformed("The 'token_version' parameter must be 1 or 2.");
    extension.version = version === '1' ? 1 : 2;
  }

  const name = form.get('name');
  if (name) extension.name = name;

  const oid = form.get('oid');
  if (oid) {
    if (!GUID.test(oid.toLowerCase())) throw malformed("The 'oid' parameter must be a GUID.");
    extension.oid = oid.toLowerCase();
  }

  const expiresIn = form.get('expires_in');
  if (expiresIn) {
    if (!/^[1-9]\d{0,7}$/.test(expiresIn)) throw malformed("The 'expires_in' parameter must be a positive number of seconds.");
    extension.expiresInSeconds = Number(expiresIn);
  }
  return extension;
}
