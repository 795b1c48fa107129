/**
 * The credential of an identity-based connection signs in as the identity its settings name, as Azure's
 * host does for the triggers of the same connection. App Service's managed identity endpoint is played
 * by a small server speaking its protocol, so that @azure/identity's own App Service path runs.
 */
import { DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectionCredential } from '../../shared/identity-credential.js';
import { startSmallServer, type SmallServer } from '../support/small-server.js';

const IDENTITY_HEADER = 'identity-header-secret';
const STORAGE_SCOPE = 'https://storage.azure.com/.default';
let endpoint: SmallServer;
/** The `client_id` of each token request; null where the request named none (the system-assigned identity). */
let askedFor: (string | null)[] = [];

beforeAll(async () => {
  endpoint = await startSmallServer((request, response) => {
    const query = new URL(request.url ?? '/', 'http://localhost').searchParams;
    askedFor.push(query.get('client_id'));
    const known = request.headers['x-identity-header'] === IDENTITY_HEADER && query.get('api-version') === '2019-08-01';
    response.writeHead(known ? 200 : 400, { 'Content-Type': 'application/json' });
    const expiresOn = String(Math.floor(Date.now() / 1000) + 3600);
    const clientId = query.get('client_id') ?? 'system-assigned';
    response.end(JSON.stringify({ access_token: `token-of-${clientId}`, expires_on: expiresOn, resource: query.get('resource'), token_type: 'Bearer' }));
  });
});
afterAll(() => endpoint.close());
afterEach(() => {
  vi.unstubAllEnvs();
  askedFor = [];
});

/** An App Service instance's environment: its managed identity endpoint, and no other credential of DefaultAzureCredential's chain. */
function onAppService() {
  vi.stubEnv('IDENTITY_ENDPOINT', `${endpoint.url}/msi/token`);
  vi.stubEnv('IDENTITY_HEADER', IDENTITY_HEADER);
  for (const name of ['AZURE_CLIENT_ID', 'AZURE_TENANT_ID', 'AZURE_CLIENT_SECRET', 'AZURE_FEDERATED_TOKEN_FILE', 'MSI_ENDPOINT']) vi.stubEnv(name, undefined);
}

describe('an identity-based connection', () => {
  it('with __credential=managedidentity signs in as the managed identity only: the user-assigned one __clientId names', async () => {
    onAppService();
    const credential = await connectionCredential({ managedIdentity: true, clientId: 'user-assigned-1' });
    expect(credential).toBeInstanceOf(ManagedIdentityCredential);
    expect((await credential.getToken(STORAGE_SCOPE))?.token).toBe('token-of-user-assigned-1');
    expect(askedFor).toEqual(['user-assigned-1']);
  });

  it('with __credential=managedidentity and no __clientId signs in as the system-assigned identity', async () => {
    onAppService();
    const credential = await connectionCredential({ managedIdentity: true, clientId: undefined });
    expect((await credential.getToken(STORAGE_SCOPE))?.token).toBe('token-of-system-assigned');
    expect(askedFor).toEqual([null]);
  });

  it("without __credential goes through DefaultAzureCredential's chain, whose managed identity is __clientId's", async () => {
    onAppService();
    const credential = await connectionCredential({ managedIdentity: false, clientId: 'user-assigned-2' });
    expect(credential).toBeInstanceOf(DefaultAzureCredential);
    expect((await credential.getToken(STORAGE_SCOPE))?.token).toBe('token-of-user-assigned-2');
    expect(askedFor).toEqual(['user-assigned-2']);
  });
});
