/**
 * The token endpoint's grants: client_credentials (an app token for the API's `.default`) and
 * password (a user token with the API scopes asked for) are answered here, jwt-bearer goes to
 * on-behalf-of.ts, any other grant is Entra's unsupported_grant_type.
 */
import { API_USER_SCOPE, DEFAULT_TOKEN_LIFETIME_SECONDS, type TokenOptions } from './claims.js';
import { EntraError } from './entra-error.js';
import { ON_BEHALF_OF_GRANT_TYPE, onBehalfOf } from './on-behalf-of.js';
import {
  audienceFor,
  authenticateClient,
  clientCredentials,
  localExtension,
  requestedApiScopes,
  requiredParameter,
  type TokenEndpointContext,
  type TokenResponse,
} from './token-request.js';

export async function handleTokenRequest(
  form: URLSearchParams,
  authorizationHeader: string | undefined,
  context: TokenEndpointContext,
): Promise<TokenResponse> {
  const grantType = requiredParameter(form, 'grant_type');
  const client = clientCredentials(form, authorizationHeader);
  const extension = localExtension(form);
  const lifetime = extension.expiresInSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
  const shared = { ...extension, tenantId: context.tenantId, clientAppId: client.id, expiresInSeconds: lifetime };
  if (grantType === ON_BEHALF_OF_GRANT_TYPE) return onBehalfOf(form, client, lifetime, context);
  if (grantType !== 'client_credentials' && grantType !== 'password') {
    throw new EntraError(400, 'unsupported_grant_type', 70003, `The app requested an unsupported grant type '${grantType}'.`);
  }

  let tokenOptions: TokenOptions;
  let grantedScope: string;
  if (grantType === 'client_credentials') {
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
    tokenOptions = { ...shared, kind: 'app', audience: audienceFor(requested.resource, extension.version), clientAuthentication };
    grantedScope = `${requested.resource}/.default`;
  } else {
    const username = requiredParameter(form, 'username');
    requiredParameter(form, 'password');
    const requested = requestedApiScopes(requiredParameter(form, 'scope'), context);
    // '.default' asks for every scope consented to, and the API exposes just one.
    const scopes = requested.names.includes('.default') ? [API_USER_SCOPE] : requested.names;
    tokenOptions = { ...shared, kind: 'user', username, scopes, audience: audienceFor(requested.resource, extension.version) };
    grantedScope = scopes.map((name) => `${requested.resource}/${name}`).join(' ');
  }
  const accessToken = await context.issueToken(tokenOptions);
  return { token_type: 'Bearer', scope: grantedScope, expires_in: lifetime, ext_expires_in: lifetime, access_token: accessToken };
}
