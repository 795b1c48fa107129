/**
 * The On-Behalf-Of grant (jwt-bearer with requested_token_use=on_behalf_of): the assertion verified as a
 * user's access token to the API from this provider and tenant, Graph scopes granted (Graph's `.default` as
 * GRAPH_CONSENTED_SCOPES), a v1 Microsoft Graph token issued for the same user, and with openid and
 * client_info=1 the v2 id token and client_info msal-node makes the account of. Also the LOCAL DEVELOPMENT
 * EXTENSION users whose names make it fail with Entra's consent or multi-factor errors.
 */
import { checkEntraToken, TokenCheckFailed, v2Issuer } from '../entra-token.js';
import { DEFAULT_TOKEN_LIFETIME_SECONDS, opaqueId, pairwiseSubject } from './claims.js';
import { EntraError, entraTime, malformedRequest } from './entra-error.js';
import {
  apiAudiences,
  authenticateClient,
  invalidScope,
  requestedScopes,
  requiredParameter,
  unknownResource,
  type ClientCredentials,
  type TokenEndpointContext,
  type TokenResponse,
} from './token-request.js';

/** The audience of the Microsoft Graph tokens On-Behalf-Of issues. */
export const GRAPH_RESOURCE = 'https://graph.microsoft.com';
/** Microsoft Graph's application id, the other name Entra knows Graph by. */
export const GRAPH_APP_ID = '00000003-0000-0000-c000-000000000000';
/** What Graph's `.default` scope grants: the delegated permissions the API is taken to have, admin-consented. */
export const GRAPH_CONSENTED_SCOPES = ['User.Read', 'User.Read.All'];
/** User name prefixes that make On-Behalf-Of fail (LOCAL DEVELOPMENT EXTENSION). */
export const NEEDS_CONSENT_USER_PREFIX = 'needs-consent';
export const NEEDS_MFA_USER_PREFIX = 'needs-mfa';

export const ON_BEHALF_OF_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
// The Conditional Access policy named in the claims challenge of simulated MFA; any GUID does.
const MFA_POLICY_ID = 'c0ffee00-1e55-4a11-8b0b-5eedfacade01';

interface AssertedUser {
  oid: string;
  username: string;
  name: string | undefined;
}

/**
 * Exchanges a user's access token to the API (the assertion) for a Microsoft Graph token of the same user,
 * issued to the API, as Entra's v2 token endpoint does.
 */
export async function onBehalfOf(form: URLSearchParams, client: ClientCredentials, lifetime: number, context: TokenEndpointContext): Promise<TokenResponse> {
  const clientAuthentication = authenticateClient(client, context);
  if (requiredParameter(form, 'requested_token_use') !== 'on_behalf_of') {
    throw malformedRequest("The 'requested_token_use' parameter must be 'on_behalf_of'.");
  }
  const scopeParameter = requiredParameter(form, 'scope');
  const user = await verifyUserAssertion(requiredParameter(form, 'assertion'), client.id, context);
  const scopes = requestedGraphScopes(scopeParameter, context);
  const simulatedFailure = simulatedOnBehalfOfFailure(user.username, client.id);
  if (simulatedFailure) throw simulatedFailure;

  const accessToken = await context.issueToken({
    tenantId: context.tenantId,
    kind: 'user',
    // Graph accepts only v1 tokens, so Entra issues v1 tokens for Graph whichever endpoint is asked.
    version: 1,
    username: user.username,
    name: user.name,
    oid: user.oid,
    scopes: scopes.names,
    audience: GRAPH_RESOURCE,
    clientAppId: client.id,
    clientAuthentication,
    expiresInSeconds: lifetime,
  });
  const openIdRequested = scopeParameter.split(/\s+/).includes('openid');
  return {
    token_type: 'Bearer',
    scope: scopes.names.map((name) => `${scopes.resource}/${name}`).join(' '),
    expires_in: lifetime,
    ext_expires_in: lifetime,
    access_token: accessToken,
    ...(openIdRequested ? { id_token: await signIdToken(user, client.id, context) } : {}),
    ...(form.get('client_info') === '1' ? { client_info: clientInfo(user.oid, context.tenantId) } : {}),
  };
}

/** The user of an assertion, once it is known to be a user's access token to the API from this provider and tenant. */
async function verifyUserAssertion(assertion: string, presentingClientId: string, context: TokenEndpointContext): Promise<AssertedUser> {
  // Entra's code for an assertion that is invalid for any other reason.
  const invalid = (description: string) => new EntraError(400, 'invalid_grant', 50013, description);
  // The assertion must be for the API, and the API must be the client presenting it.
  const audiences = presentingClientId.toLowerCase() === context.clientId ? apiAudiences(context.clientId) : [];
  let claims;
  try {
    ({ claims } = await checkEntraToken(assertion, { keys: () => context.keys, authorityHost: context.authorityHost, audiences, tenantId: context.tenantId }));
  } catch (error) {
    if (!(error instanceof TokenCheckFailed)) throw error;
    const thumbprint = error.header.x5t ?? error.header.kid ?? '';
    switch (error.problem) {
      case 'malformed':
        throw new EntraError(400, 'invalid_grant', 50027, 'JWT token is invalid or malformed.');
      case 'key':
      case 'signature': {
        const reason = error.problem === 'key' ? 'The key was not found.' : 'The provided signature value did not match the expected signature value.';
        throw invalid(`Assertion failed signature validation. [Reason - ${reason}, Thumbprint of key used by client: '${thumbprint}']`);
      }
      case 'lifetime':
        throw new EntraError(
          400,
          'invalid_grant',
          500133,
          `Assertion is not within its valid time range. Ensure that the access token is not expired before using it for user assertion, or ` +
            `request a new token. Current time: ${entraTime(Date.now())}, expiry time of assertion ${entraTime((error.claims.exp ?? 0) * 1000)}.`,
        );
      case 'tenant':
      case 'issuer':
        throw invalid(`Assertion is invalid: its issuer '${String(error.claims.iss)}' is not an issuer of tenant '${context.tenantId}'.`);
      case 'audience':
        throw new EntraError(
          400,
          'invalid_grant',
          500131,
          `Assertion audience does not match the Client app presenting the assertion. The audience in the assertion ` +
            `was '${String(error.claims.aud)}' and the expected audience is '${presentingClientId}' or one of the Application ` +
            `Uris of this application with App ID '${presentingClientId}'. The downstream client must request a token ` +
            `for the expected audience (the application that made the OBO request) and this application should use ` +
            `that token as the assertion.`,
        );
    }
  }
  // An app-only token has no user to act for; Entra answers such assertions with its InvalidAssertion code too.
  if (typeof claims.scp !== 'string' || claims.idtyp === 'app') {
    throw invalid(
      "Assertion is not a user token: it has no 'scp' claim (an app-only token). The On-Behalf-Of flow needs a delegated access token of a signed-in user.",
    );
  }
  const username = claims.upn ?? claims.preferred_username ?? claims.unique_name;
  if (typeof claims.oid !== 'string' || typeof username !== 'string') {
    throw invalid("Assertion is not a user token: it has no 'oid' and user name claims.");
  }
  return { oid: claims.oid, username, name: typeof claims.name === 'string' ? claims.name : undefined };
}

function requestedGraphScopes(scopeParameter: string, context: TokenEndpointContext): { resource: string; names: string[] } {
  const requested = requestedScopes(scopeParameter);
  const resource = requested.resource.toLowerCase().replace(/\/$/, '');
  if (resource !== GRAPH_RESOURCE && resource !== GRAPH_APP_ID) throw unknownResource(requested.resource, context.tenantId);
  if (!requested.names.includes('.default')) return requested;
  if (requested.names.length > 1) throw invalidScope(scopeParameter);
  return { resource: requested.resource, names: GRAPH_CONSENTED_SCOPES };
}

/** The failures LOCAL DEVELOPMENT EXTENSION users get, in Entra's words. */
function simulatedOnBehalfOfFailure(username: string, clientId: string): EntraError | undefined {
  const name = username.toLowerCase();
  if (name.startsWith(NEEDS_CONSENT_USER_PREFIX)) {
    return new EntraError(
      400,
      'invalid_grant',
      65001,
      `The user or administrator has not consented to use the application with ID '${clientId}' named 'Local ` +
        `API'. Send an interactive authorization request for this user and resource.`,
      { suberror: 'consent_required' },
    );
  }
  if (name.startsWith(NEEDS_MFA_USER_PREFIX)) {
    return new EntraError(
      400,
      'interaction_required',
      50076,
      `Due to a configuration change made by your administrator, or because you moved to a new location, you ` +
        `must use multi-factor authentication to access '${GRAPH_APP_ID}'.`,
      {
        suberror: 'basic_action',
        claims: JSON.stringify({ access_token: { capolids: { essential: true, values: [MFA_POLICY_ID] } } }),
      },
    );
  }
  return undefined;
}

/** Entra's v2 id token of the user for the client, which msal-node turns into the result's account. */
async function signIdToken(user: AssertedUser, clientAppId: string, context: TokenEndpointContext): Promise<string> {
  const issuedAt = Math.floor(Date.now() / 1000);
  return context.signer.sign({
    aud: clientAppId,
    iss: v2Issuer(context.authorityHost, context.tenantId),
    iat: issuedAt,
    nbf: issuedAt,
    exp: issuedAt + DEFAULT_TOKEN_LIFETIME_SECONDS,
    aio: opaqueId(48),
    name: user.name ?? user.username.split('@')[0],
    oid: user.oid,
    preferred_username: user.username,
    sub: pairwiseSubject(context.tenantId, user.oid, clientAppId),
    tid: context.tenantId,
    uti: opaqueId(16),
    ver: '2.0',
  });
}

/** What Entra answers to client_info=1: the account's home object and tenant ids. */
function clientInfo(oid: string, tenantId: string): string {
  return Buffer.from(JSON.stringify({ uid: oid, utid: tenantId })).toString('base64url');
}
