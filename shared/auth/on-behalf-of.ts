import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ConfidentialClientApplication, Configuration } from '@azure/msal-node';
import { BoundedMap } from '../lib/bounded-map.js';
import { authSettings, onBehalfOfCredential, type OnBehalfOfCredential } from '../settings/read.js';
import { ApiError, DependencyUnavailableError } from '../errors.js';
import { connectionCredential } from '../settings/connection-credential.js';
import { lazily } from '../lib/lazy.js';
import type { Principal } from './principal.js';

const CACHE_LIMIT = 500;
// A token this close to expiry is not handed out: the downstream call could outlive it.
const EXPIRY_MARGIN_MS = 60_000;
const SERVER_ERROR_CODES_FOR_A_BAD_ASSERTION = new Set(['invalid_grant', 'invalid_request']);

/** A certificate credential from a PEM file holding the private key and its certificate (chain). */
function certificateCredential(path: string) {
  const pem = readFileSync(path, 'utf8');
  const certificates = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (!certificates[0]) throw new Error(`${path} holds no certificate`);
  const certificate = new X509Certificate(certificates[0]);
  return {
    thumbprintSha256: createHash('sha256').update(certificate.raw).digest('hex'),
    privateKey: createPrivateKey(pem).export({ type: 'pkcs8', format: 'pem' }).toString(),
    x5c: certificates.join('\n'),
  };
}

/** The audience of a token that Entra takes as a federated client assertion (a federated identity credential's). */
export const TOKEN_EXCHANGE_SCOPE = 'api://AzureADTokenExchange/.default';

/**
 * The managed identity's token for the token exchange audience, as the client assertion: msal-node asks for one
 * for each token request, and the identity library keeps the token until it nears its expiry.
 */
async function managedIdentityAssertion(clientId: string): Promise<() => Promise<string>> {
  const identity = await connectionCredential({ managedIdentity: true, clientId });
  return async () => {
    const token = await identity.getToken(TOKEN_EXCHANGE_SCOPE);
    if (!token) throw new DependencyUnavailableError('identityProvider');
    return token.token;
  };
}

async function clientCredential(credential: OnBehalfOfCredential): Promise<Partial<Configuration['auth']>> {
  if ('secret' in credential) return { clientSecret: credential.secret };
  if ('certificatePath' in credential) return { clientCertificate: certificateCredential(credential.certificatePath) };
  return { clientAssertion: await managedIdentityAssertion(credential.managedIdentityClientId) };
}

/** One confidential client per process; msal-node loads only when a request first needs it. */
const confidentialClient = lazily(async (): Promise<ConfidentialClientApplication> => {
  const { authorityHost, clientId, homeTenantId } = authSettings();
  const credential = onBehalfOfCredential();
  const { ConfidentialClientApplication } = await import('@azure/msal-node');
  const configuration: Configuration = {
    auth: {
      clientId,
      authority: `${authorityHost}/${homeTenantId}`,
      // Trusted as configured, so sovereign clouds and other identity providers work the same way.
      knownAuthorities: [new URL(authorityHost).host],
      ...(await clientCredential(credential)),
    },
  };
  return new ConfidentialClientApplication(configuration);
});

/** Tokens already exchanged, per caller token and scopes. */
const exchanged = new BoundedMap<string, { accessToken: string; expiresAt: number }>(CACHE_LIMIT);

interface MsalFailure {
  errorCode?: string;
  subError?: string;
  claims?: string;
  name?: string;
}

/** Turns msal-node's failures into the contract's answers. */
function translate(error: unknown): Error {
  const { errorCode = '', subError = '', claims, name } = (error ?? {}) as MsalFailure;
  if (subError === 'consent_required' || errorCode === 'consent_required') return new ApiError(403, 'consentRequired');
  // msal-node raises every answer that asks for the user (interaction_required, login_required, …) as this class.
  if (name === 'InteractionRequiredAuthError') {
    const challenge = claims ? Buffer.from(claims).toString('base64') : '';
    return new ApiError(
      401,
      'interactionRequired',
      {},
      {
        headers: { 'WWW-Authenticate': `Bearer error="insufficient_claims"${challenge ? `, claims="${challenge}"` : ''}` },
        ...(claims ? { extra: { claims } } : {}),
      },
    );
  }
  if (SERVER_ERROR_CODES_FOR_A_BAD_ASSERTION.has(errorCode)) {
    return new ApiError(401, 'tokenInvalid', {}, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });
  }
  // ClientAuthError: the identity provider could not be reached (network_error, endpoints_resolution_error, …).
  if (name === 'ClientAuthError' || /temporarily_unavailable|server_error/.test(errorCode)) {
    return new DependencyUnavailableError('identityProvider', error);
  }
  // invalid_client and the like: the app's own credential or registration is wrong.
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Exchanges the caller's token for a token to a downstream API (Microsoft Graph) on the caller's
 * behalf. Only a user can delegate: an app-only token gets a 403.
 */
export async function onBehalfOf(principal: Principal, scopes: string[]): Promise<string> {
  if (principal.kind !== 'user') throw new ApiError(403, 'usersOnly');
  const key = createHash('sha256')
    .update(principal.tenantId)
    .update('\n')
    .update(principal.accessToken)
    .update('\n')
    .update(scopes.join(' '))
    .digest('base64url');
  const cached = exchanged.get(key);
  if (cached && cached.expiresAt - EXPIRY_MARGIN_MS > Date.now()) return cached.accessToken;

  const application = await confidentialClient();
  let result;
  try {
    result = await application.acquireTokenOnBehalfOf({
      oboAssertion: principal.accessToken,
      scopes,
      authority: `${authSettings().authorityHost}/${principal.tenantId}`,
      skipCache: true,
    });
  } catch (error) {
    throw translate(error);
  } finally {
    // Our own cache above is the bounded one; msal's would keep every caller's token forever.
    application.clearCache();
  }
  if (!result?.accessToken) throw new DependencyUnavailableError('identityProvider');
  exchanged.set(key, { accessToken: result.accessToken, expiresAt: result.expiresOn?.getTime() ?? Date.now() });
  return result.accessToken;
}
