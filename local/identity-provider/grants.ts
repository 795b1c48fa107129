/**
 * The token endpoint's grants: client_credentials (an app token for the API's `.default`) and password (a user
 * token with the API scopes asked for) here, jwt-bearer in on-behalf-of.ts, any other unsupported_grant_type.
 */
import { API_USER_SCOPE, DEFAULT_TOKEN_LIFETIME_SECONDS } from './claims.js';
import { EntraError } from './entra-error.js';
import { ON_BEHALF_OF_GRANT_TYPE, onBehalfOf } from './on-behalf-of.js';
import {
  apiAudiences,
  authenticateClient,
  clientCredentials,
  localExtension,
  requestedScopes,
  requiredParameter,
  tokenResponse,
  unknownResource,
  type TokenEndpointContext,
} from './token-request.js';

export async function handleTokenRequest(form: URLSearchParams, authorizationHeader: string | undefined, context: TokenEndpointContext) {
  const grantType = requiredParameter(form, 'grant_type');
  const client = clientCredentials(form, authorizationHeader);
  const extension = localExtension(form);
  const lifetime = extension.expiresInSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
  if (grantType === ON_BEHALF_OF_GRANT_TYPE) return onBehalfOf(form, client, lifetime, context);
  if (grantType !== 'client_credentials' && grantType !== 'password') {
    throw new EntraError(400, 'unsupported_grant_type', 70003, `The app requested an unsupported grant type '${grantType}'.`);
  }
  const app = grantType === 'client_credentials';
  const clientAuthentication = app ? authenticateClient(client, context) : undefined;
  const username = app ? undefined : requiredParameter(form, 'username');
  if (!app) requiredParameter(form, 'password');
  const scope = requiredParameter(form, 'scope');
  const { resource, names } = requestedScopes(scope);
  if (!apiAudiences(context.clientId).includes(resource.toLowerCase())) throw unknownResource(resource, context.tenantId);
  if (app && (names.length !== 1 || names[0] !== '.default')) {
    const rule = 'Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).';
    throw new EntraError(400, 'invalid_scope', 1002012, `The provided value for scope ${scope} is not valid. ${rule}`);
  }
  // '.default' asks for every scope consented to, and the API exposes just one.
  const scopes = !app && names.includes('.default') ? [API_USER_SCOPE] : names;
  const accessToken = await context.issueToken({
    ...extension,
    tenantId: context.tenantId,
    kind: app ? 'app' : 'user',
    username,
    scopes,
    clientAuthentication,
    // Entra puts the resource as requested (app ID URI or client id) in the aud of v1 tokens; v2 always has the client id.
    audience: extension.version === 2 ? undefined : resource,
    clientAppId: client.id,
    expiresInSeconds: lifetime,
  });
  return tokenResponse(scopes.map((name) => `${resource}/${name}`).join(' '), lifetime, accessToken);
}
