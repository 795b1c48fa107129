/**
 * The On-Behalf-Of grant (jwt-bearer with requested_token_use=on_behalf_of): a user's access token to the API
 * from this provider and tenant exchanged for a v1 Microsoft Graph token of the same user, with, on request, the
 * id token and client_info msal-node makes the account of. Graph is the only downstream resource it knows.
 */
import { checkEntraToken, TokenCheckFailed } from './entra-token.js';
import type { TokenOptions } from './claims.js';
import { EntraError, malformedRequest, outsideLifetime } from './entra-error.js';
import { requestedScopes, requiredParameter, tokenResponse, type TokenClient, type TokenEndpointContext } from './token-request.js';

/** The audience of the Microsoft Graph tokens On-Behalf-Of issues. */
export const GRAPH_RESOURCE = 'https://graph.microsoft.com';
/** Microsoft Graph's application id, the other name Entra knows Graph by. */
export const GRAPH_APP_ID = '00000003-0000-0000-c000-000000000000';
/** What Graph's `.default` scope grants: the delegated permissions the API is taken to have, admin-consented. */
const GRAPH_CONSENTED_SCOPES = ['User.Read', 'User.Read.All'];

export const ON_BEHALF_OF_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
// The Conditional Access policy named in the claims challenge of simulated MFA; any GUID does.
const MFA_POLICY_ID = 'c0ffee00-1e55-4a11-8b0b-5eedfacade01';

export async function onBehalfOf(form: URLSearchParams, client: TokenClient, lifetime: number, context: TokenEndpointContext) {
  if (requiredParameter(form, 'requested_token_use') !== 'on_behalf_of') {
    throw malformedRequest("The 'requested_token_use' parameter must be 'on_behalf_of'.");
  }
  const scopes = requestedScopes(form, context.tenantId, [GRAPH_RESOURCE, `${GRAPH_RESOURCE}/`, GRAPH_APP_ID], GRAPH_CONSENTED_SCOPES);
  const user = await verifyUserAssertion(requiredParameter(form, 'assertion'), client.id, context);
  simulateFailure(user.username, client.id);
  const ofUser: TokenOptions = { ...user, tenantId: context.tenantId, kind: 'user', clientAppId: client.id, clientAuthentication: client.authentication };
  // Graph accepts only v1 tokens, so Entra issues v1 tokens for Graph whichever endpoint is asked.
  const accessToken = await context.issueToken({ ...ofUser, scopes: scopes.names, audience: GRAPH_RESOURCE, expiresInSeconds: lifetime });
  // Entra's v2 id token: the user's claims for the client app, which it names in aud only.
  const idToken: TokenOptions = { ...ofUser, version: 2, scopes: [], audience: client.id, extraClaims: { azp: undefined, azpacr: undefined } };
  const clientInfo = { uid: user.oid, utid: context.tenantId };
  return {
    ...tokenResponse(scopes, lifetime, accessToken),
    ...(form.get('scope')!.split(/\s+/).includes('openid') ? { id_token: await context.issueToken(idToken) } : {}),
    ...(form.get('client_info') === '1' ? { client_info: Buffer.from(JSON.stringify(clientInfo)).toString('base64url') } : {}),
  };
}

/** The user of an assertion, once it is known to be a user's access token to the API from this provider and tenant. */
async function verifyUserAssertion(assertion: string, presentingClientId: string, context: TokenEndpointContext) {
  // Entra's code for an assertion that is invalid for any other reason.
  const invalid = (description: string) => new EntraError('invalid_grant', 50013, description);
  // The assertion must be for the API, and the API must be the client presenting it.
  const audiences = presentingClientId.toLowerCase() === context.clientId ? context.audiences : [];
  let claims;
  try {
    ({ claims } = await checkEntraToken(assertion, { ...context, keys: () => context.keys, audiences }));
  } catch (error) {
    if (!(error instanceof TokenCheckFailed)) throw error;
    switch (error.problem) {
      case 'malformed':
        throw new EntraError('invalid_grant', 50027, 'JWT token is invalid or malformed.');
      case 'key':
      case 'signature': {
        const reason = error.problem === 'key' ? 'The key was not found.' : 'The provided signature value did not match the expected signature value.';
        const thumbprint = error.header.x5t ?? error.header.kid ?? '';
        throw invalid(`Assertion failed signature validation. [Reason - ${reason}, Thumbprint of key used by client: '${thumbprint}']`);
      }
      case 'lifetime':
        throw new EntraError('invalid_grant', 500133, outsideLifetime('Assertion', error.claims.exp));
      case 'tenant':
      case 'issuer':
        throw invalid(`Assertion is invalid: its issuer '${String(error.claims.iss)}' is not an issuer of tenant '${context.tenantId}'.`);
      case 'audience': {
        const expected = `The audience in the assertion was '${String(error.claims.aud)}' and the expected audience is '${presentingClientId}'.`;
        throw new EntraError('invalid_grant', 500131, `Assertion audience does not match the Client app presenting the assertion. ${expected}`);
      }
    }
  }
  // An app-only token has no user to act for; Entra answers such assertions with its InvalidAssertion code too.
  const username = claims.upn ?? claims.preferred_username ?? claims.unique_name;
  if (typeof claims.scp !== 'string' || claims.idtyp === 'app' || typeof claims.oid !== 'string' || typeof username !== 'string') {
    throw invalid('Assertion is not a user token (scp, oid and a user name): the On-Behalf-Of flow needs a delegated access token of a signed-in user.');
  }
  return { oid: claims.oid, username, name: typeof claims.name === 'string' ? claims.name : undefined };
}

/** LOCAL DEVELOPMENT EXTENSION: users named needs-consent... or needs-mfa... get Entra's consent or multi-factor error, for tests of callers. */
function simulateFailure(username: string, clientId: string): void {
  const name = username.toLowerCase();
  if (name.startsWith('needs-consent')) {
    const description = `The user or administrator has not consented to use the application with ID '${clientId}' named 'Local API'.`;
    const action = 'Send an interactive authorization request for this user and resource.';
    throw new EntraError('invalid_grant', 65001, `${description} ${action}`, { suberror: 'consent_required' });
  }
  if (name.startsWith('needs-mfa')) {
    const why = 'Due to a configuration change made by your administrator, or because you moved to a new location,';
    const description = `${why} you must use multi-factor authentication to access '${GRAPH_APP_ID}'.`;
    const claims = JSON.stringify({ access_token: { capolids: { essential: true, values: [MFA_POLICY_ID] } } });
    throw new EntraError('interaction_required', 50076, description, { suberror: 'basic_action', claims });
  }
}
