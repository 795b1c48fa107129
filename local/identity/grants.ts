/**
 * The token endpoint's grants: client_credentials (an app token for the API's `.default`) and password (a user
 * token with the API scopes asked for) here, jwt-bearer in on-behalf-of.ts, any other unsupported_grant_type.
 */
import { API_USER_SCOPE } from './claims.js';
import { EntraError } from './entra-error.js';
import { ON_BEHALF_OF_GRANT_TYPE, onBehalfOf } from './on-behalf-of.js';
import { authenticateClient, localExtension, requestedScopes, requiredParameter, tokenResponse, type TokenEndpointContext } from './token-request.js';

export async function handleTokenRequest(form: URLSearchParams, authorizationHeader: string | undefined, context: TokenEndpointContext) {
  const grantType = requiredParameter(form, 'grant_type');
  if (!['client_credentials', 'password', ON_BEHALF_OF_GRANT_TYPE].includes(grantType)) {
    throw new EntraError('unsupported_grant_type', 70003, `The app requested an unsupported grant type '${grantType}'.`);
  }
  const client = await authenticateClient(form, authorizationHeader, context);
  const extension = localExtension(form);
  if (grantType === ON_BEHALF_OF_GRANT_TYPE) return onBehalfOf(form, client, extension.expiresInSeconds, context);
  const app = grantType === 'client_credentials';
  const username = app ? undefined : requiredParameter(form, 'username');
  if (!app) requiredParameter(form, 'password');
  // An app's `.default` stands for its app roles, which its token carries; a user's for the one scope the API exposes.
  const scopes = requestedScopes(form, context.tenantId, context.audiences, [app ? '.default' : API_USER_SCOPE]);
  if (app && scopes.names[0] !== '.default') {
    const rule = 'Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).';
    throw new EntraError('invalid_scope', 1002012, `The provided value for scope ${form.get('scope')} is not valid. ${rule}`);
  }
  const accessToken = await context.issueToken({
    ...extension,
    tenantId: context.tenantId,
    kind: app ? 'app' : 'user',
    username,
    scopes: scopes.names,
    clientAuthentication: client.authentication,
    // Entra puts the resource as requested (app ID URI or client id) in the aud of v1 tokens; v2 always has the client id.
    audience: extension.version === 2 ? undefined : scopes.resource,
    clientAppId: client.id,
  });
  return tokenResponse(scopes, extension.expiresInSeconds, accessToken);
}
