/**
 * The credential of an identity-based connection signs in as the identity its settings name, as Azure's
 * host does for the triggers of the same connection. The local identity provider serves App Service's
 * managed identity endpoint, so that @azure/identity's own App Service path runs.
 */
import { DefaultAzureCredential, ManagedIdentityCredential, type TokenCredential } from '@azure/identity';
import { decodeJwt } from 'jose';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../../local/identity/provider.js';
import { connectionCredential } from '../../../shared/settings/connection-credential.js';
import { onAppService } from '../../support/app-service.js';

const STORAGE_SCOPE = 'https://storage.azure.com/.default';
const SYSTEM_ASSIGNED = randomUUID();
const USER_ASSIGNED = [randomUUID(), randomUUID()] as const;
let provider: IdentityProvider;

beforeAll(async () => {
  const managedIdentities = { systemAssigned: SYSTEM_ASSIGNED, userAssigned: [...USER_ASSIGNED] };
  provider = await startIdentityProvider({ tenants: [randomUUID()], clientId: randomUUID(), tls: inject('trustedTls'), managedIdentities });
});
afterAll(() => provider?.close());
afterEach(() => vi.unstubAllEnvs());

/** The identity the credential's token is of. */
const signedInAs = async (credential: TokenCredential) => decodeJwt((await credential.getToken(STORAGE_SCOPE))!.token).appid;

describe('an identity-based connection', () => {
  it('with __credential=managedidentity signs in as the managed identity only: the user-assigned one __clientId names', async () => {
    onAppService(provider);
    const credential = await connectionCredential({ managedIdentity: true, clientId: USER_ASSIGNED[0] });
    expect(credential).toBeInstanceOf(ManagedIdentityCredential);
    expect(await signedInAs(credential)).toBe(USER_ASSIGNED[0]);
  });

  it('with __credential=managedidentity and no __clientId signs in as the system-assigned identity', async () => {
    onAppService(provider);
    expect(await signedInAs(await connectionCredential({ managedIdentity: true, clientId: undefined }))).toBe(SYSTEM_ASSIGNED);
  });

  it("without __credential goes through DefaultAzureCredential's chain, whose managed identity is __clientId's", async () => {
    onAppService(provider);
    const credential = await connectionCredential({ managedIdentity: false, clientId: USER_ASSIGNED[1] });
    expect(credential).toBeInstanceOf(DefaultAzureCredential);
    expect(await signedInAs(credential)).toBe(USER_ASSIGNED[1]);
  });
});
