/**
 * App Service's managed identity endpoint, as a Function App reaches it through IDENTITY_ENDPOINT and IDENTITY_HEADER:
 * a token of the app's system-assigned identity, or of the user-assigned one `client_id` names, for the `resource` asked.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeJwt } from 'jose';
import { sendJson } from '../embedded-http.js';
import type { TokenOptions } from './claims.js';

/** The client ids of the app's identities: a request naming none gets the system-assigned one's tokens. */
export type ManagedIdentities = { systemAssigned: string; userAssigned: string[] };

export const MANAGED_IDENTITY_PATH = '/msi/token';
/**
 * The audiences of tokens Entra takes as federated client assertions (public cloud, US Government, China); their
 * resource asks for v2 tokens, so a managed identity's token for one has the v2 issuer, which its federated identity
 * credential names.
 */
export const TOKEN_EXCHANGE_AUDIENCES = ['api://AzureADTokenExchange', 'api://AzureADTokenExchangeUSGov', 'api://AzureADTokenExchangeChina'];
// Azure's managed identity tokens last a day.
const LIFETIME_SECONDS = 24 * 60 * 60;

export async function serveManagedIdentityToken(
  request: IncomingMessage,
  response: ServerResponse,
  context: { identities: ManagedIdentities; header: string; tenantId: string; issueToken(options: TokenOptions): Promise<string> },
): Promise<{ clientId: string; resource: string } | void> {
  const fail = (statusCode: 400 | 401, message: string) => sendJson(response, statusCode, { statusCode, message, correlationId: randomUUID() });
  if (request.headers['x-identity-header'] !== context.header) return fail(401, 'The X-IDENTITY-HEADER header is missing or wrong.');
  const { systemAssigned, userAssigned } = context.identities;
  const query = Object.fromEntries(new URL(request.url ?? '/', 'https://localhost').searchParams);
  const { resource, 'api-version': apiVersion = '', client_id: clientId = systemAssigned } = query;
  if (apiVersion !== '2019-08-01') return fail(400, `The api-version '${apiVersion}' is not supported: use 2019-08-01.`);
  if (!resource) return fail(400, 'The resource parameter is required.');
  if (![systemAssigned, ...userAssigned].includes(clientId.toLowerCase())) return fail(400, 'Unable to load the proper Managed Identity.');
  const claims = { tenantId: context.tenantId, kind: 'app', clientAppId: clientId.toLowerCase(), clientAuthentication: '2', audience: resource } as const;
  const version = TOKEN_EXCHANGE_AUDIENCES.includes(resource) ? 2 : 1;
  const accessToken = await context.issueToken({ ...claims, version, expiresInSeconds: LIFETIME_SECONDS });
  const expiresOn = String(decodeJwt(accessToken).exp);
  sendJson(response, 200, { access_token: accessToken, expires_on: expiresOn, resource, token_type: 'Bearer', client_id: claims.clientAppId });
  return { clientId: claims.clientAppId, resource };
}
