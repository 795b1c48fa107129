/**
 * Identity-based connections on the local stack, each through the real client: the identity provider's managed identity
 * endpoint as `@azure/identity` reaches App Service's (IDENTITY_ENDPOINT, IDENTITY_HEADER), the embedded Cosmos DB's
 * checks of the Entra tokens `@azure/cosmos` sends, Azurite's basic OAuth behind `@azure/storage-queue`, and the
 * credential the local host makes of `<connection>__credential` and `__clientId`.
 */
import { randomUUID } from 'node:crypto';
import { CosmosClient } from '@azure/cosmos';
import { DefaultAzureCredential, ManagedIdentityCredential, type TokenCredential } from '@azure/identity';
import { QueueServiceClient } from '@azure/storage-queue';
import { decodeJwt, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { AzuriteQueue } from '../../../local/storage/azurite.js';
import { startCosmosEmulator, type CosmosEmulator } from '../../../local/cosmos/emulator.js';
import { LOCAL_CLIENT_ID, LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID } from '../../../local/defaults.js';
import { startIdentityProvider, type IdentityProvider } from '../../../local/identity/provider.js';
import { connectionSetting } from '../../../local/host/registrations.js';
import { startOAuthAzurite } from '../../support/oauth-azurite.js';

const SYSTEM_ASSIGNED = randomUUID();
const USER_ASSIGNED = randomUUID();
const STORAGE = 'https://storage.azure.com';
// The test workers trust this certificate (NODE_EXTRA_CA_CERTS), as the host trusts the stack's.
const tls = inject('trustedTls');

let provider: IdentityProvider;
const saved = { IDENTITY_ENDPOINT: process.env.IDENTITY_ENDPOINT, IDENTITY_HEADER: process.env.IDENTITY_HEADER };

beforeAll(async () => {
  provider = await startIdentityProvider({
    tenants: [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID],
    clientId: LOCAL_CLIENT_ID,
    tls,
    managedIdentities: { systemAssigned: SYSTEM_ASSIGNED, userAssigned: [USER_ASSIGNED] },
  });
  // As App Service sets them for a Function App with an identity; @azure/identity reads them when it asks for a token.
  Object.assign(process.env, provider.managedIdentity);
});

afterAll(async () => {
  for (const [name, value] of Object.entries(saved))
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  await provider?.close();
});

/** A credential that hands out one token, as a client would send it. */
const fixed = (token: string): TokenCredential => ({ getToken: async () => ({ token, expiresOnTimestamp: Date.now() + 3_600_000 }) });

/** A token signed by a key the identity provider never had, under its key id: only a signature check tells. */
async function forged(claims: Record<string, unknown>): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256');
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: provider.signingKid }).sign(privateKey);
}

const appToken = (audience: string, expiresInSeconds = 3600, tenantId = LOCAL_HOME_TENANT_ID) =>
  provider.issueToken({ tenantId, kind: 'app', clientAppId: USER_ASSIGNED, audience, expiresInSeconds });

describe('the managed identity endpoint', () => {
  it("gives ManagedIdentityCredential a v1 token of the system-assigned identity for the resource asked, signed with the provider's key", async () => {
    const resource = `https://${randomUUID()}.example`;
    const { token, expiresOnTimestamp } = await new ManagedIdentityCredential().getToken(`${resource}/.default`);
    const { payload } = await jwtVerify(token, provider.keys(), { algorithms: ['RS256'] });
    expect(payload).toMatchObject({
      iss: `https://sts.windows.net/${LOCAL_HOME_TENANT_ID}/`,
      aud: resource,
      tid: LOCAL_HOME_TENANT_ID,
      appid: SYSTEM_ASSIGNED,
      appidacr: '2',
      idtyp: 'app',
      ver: '1.0',
    });
    expect(payload.oid).toBe(payload.sub);
    // A day, as Azure's managed identity tokens last; msal-node takes the expiry from `expires_on` against its own clock.
    expect(payload.exp! - payload.iat!).toBe(24 * 60 * 60);
    expect(Math.abs(expiresOnTimestamp - payload.exp! * 1000)).toBeLessThanOrEqual(1000);
    expect(provider.managedIdentityTokens).toContainEqual({ clientId: SYSTEM_ASSIGNED, resource });
  });

  it('gives the user-assigned identity a clientId names, to ManagedIdentityCredential and to DefaultAzureCredential alike', async () => {
    const managed = await new ManagedIdentityCredential({ clientId: USER_ASSIGNED }).getToken(`${STORAGE}/.default`);
    const chained = await new DefaultAzureCredential({ managedIdentityClientId: USER_ASSIGNED }).getToken(`https://${randomUUID()}.example/.default`);
    for (const { token } of [managed, chained]) expect(decodeJwt(token).appid).toBe(USER_ASSIGNED);
    const systemAssigned = await new ManagedIdentityCredential().getToken(`${STORAGE}/.default`);
    // Each identity is its own service principal.
    expect(decodeJwt(managed.token).oid).not.toBe(decodeJwt(systemAssigned.token).oid);
  });

  it("answers as App Service does: 400 for an identity the app does not have or a request it cannot read, 401 without the app's IDENTITY_HEADER", async () => {
    await expect(new ManagedIdentityCredential({ clientId: randomUUID() }).getToken(`${STORAGE}/.default`)).rejects.toThrow(
      /Unable to load the proper Managed Identity/,
    );
    const dispatcher = new Agent({ connect: { ca: tls.cert } });
    const ask = async (query: string, header: string = provider.managedIdentity!.IDENTITY_HEADER) => {
      const response = await fetch(`${provider.managedIdentity!.IDENTITY_ENDPOINT}?${query}`, { headers: { 'X-IDENTITY-HEADER': header }, dispatcher });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const shape = (statusCode: number, message: RegExp) => ({ statusCode, message: expect.stringMatching(message), correlationId: expect.any(String) });
    expect(await ask(`resource=${STORAGE}&api-version=2019-08-01&client_id=${randomUUID()}`)).toEqual({
      status: 400,
      body: shape(400, /^Unable to load the proper Managed Identity\.$/),
    });
    expect(await ask('api-version=2019-08-01')).toEqual({ status: 400, body: shape(400, /resource/) });
    expect(await ask(`resource=${STORAGE}&api-version=2017-09-01`)).toEqual({ status: 400, body: shape(400, /api-version/) });
    expect(await ask(`resource=${STORAGE}&api-version=2019-08-01`, 'not-the-header')).toEqual({ status: 401, body: shape(401, /X-IDENTITY-HEADER/) });
    const answered = await ask(`resource=${STORAGE}&api-version=2019-08-01&client_id=${USER_ASSIGNED}`);
    expect(answered).toMatchObject({ status: 200, body: { resource: STORAGE, token_type: 'Bearer', client_id: USER_ASSIGNED } });
    // Seconds since the epoch, as a string, as App Service writes it.
    expect(answered.body.expires_on).toBe(String(decodeJwt(answered.body.access_token as string).exp));
    await dispatcher.close();
  });
});

describe("the local host's identity-based connections", () => {
  const env = (settings: Record<string, string>) => ({ STORE__queueServiceUri: 'https://acct.queue.core.windows.net', ...settings });
  const signedInAs = async (settings: Record<string, string>) => {
    const setting = connectionSetting('STORE', 'queueServiceUri', env(settings));
    if (!('credential' in setting)) throw new Error('not identity-based');
    return { credential: setting.credential, appid: decodeJwt((await setting.credential.getToken(`${STORAGE}/.default`))!.token).appid };
  };

  it("sign in as Azure's host does: __credential=managedidentity is the managed identity, __clientId the user-assigned one", async () => {
    // The managed identity alone: no developer sign-in of DefaultAzureCredential's chain could stand in for it.
    const managed = await signedInAs({ STORE__credential: 'managedidentity', STORE__clientId: USER_ASSIGNED });
    expect(managed.credential).toBeInstanceOf(ManagedIdentityCredential);
    expect(managed.appid).toBe(USER_ASSIGNED);
    expect(await signedInAs({ STORE__credential: 'ManagedIdentity' })).toMatchObject({ appid: SYSTEM_ASSIGNED });
    const chained = await signedInAs({ STORE__clientId: USER_ASSIGNED });
    // Without __credential, DefaultAzureCredential's chain, whose managed identity is __clientId's.
    expect(chained.credential).toBeInstanceOf(DefaultAzureCredential);
    expect(chained.appid).toBe(USER_ASSIGNED);
  });
});

describe('the embedded Cosmos DB', () => {
  let emulator: CosmosEmulator;
  let keyless: CosmosEmulator;
  const clients: CosmosClient[] = [];
  const client = (aadCredentials: TokenCredential, on = emulator) => {
    const made = new CosmosClient({ endpoint: on.endpoint, aadCredentials });
    clients.push(made);
    return made.database('lms').container('tenant-data');
  };

  beforeAll(async () => {
    const common = { port: 0, host: '127.0.0.1', database: 'lms', tls };
    const entra = { keys: provider.keys, authorityHost: provider.authorityHost, tenantId: LOCAL_HOME_TENANT_ID };
    emulator = await startCosmosEmulator({ ...common, entra });
    keyless = await startCosmosEmulator(common);
  });

  afterAll(async () => {
    for (const made of clients) made.dispose();
    await emulator?.close();
    await keyless?.close();
  });

  it("takes the managed identity's tokens for the account's scope, as @azure/cosmos asks for them, and master-key requests as before", async () => {
    const container = client(new ManagedIdentityCredential({ clientId: USER_ASSIGNED }));
    const id = randomUUID();
    expect((await container.items.create({ id, tenantId: 't1' })).statusCode).toBe(201);
    expect((await container.item(id, 't1').read()).resource).toMatchObject({ id });
    expect(provider.managedIdentityTokens).toContainEqual({ clientId: USER_ASSIGNED, resource: emulator.endpoint.replace(/\/$/, '') });
    expect([...emulator.entraClients]).toEqual([USER_ASSIGNED]);
    // Cosmos DB's global audience is taken too.
    await client(fixed(await appToken('https://cosmos.azure.com')))
      .item(id, 't1')
      .read();
    expect((await emulator.client.database('lms').container('tenant-data').item(id, 't1').read()).statusCode).toBe(200);
  });

  it("refuses with Cosmos DB's 401 a token for another audience or tenant, an expired one, one it cannot verify, any without a provider", async () => {
    const refused = async (credential: TokenCredential, on = emulator) => {
      const error = await client(credential, on)
        .items.create({ id: randomUUID(), tenantId: 't1' })
        .catch((caught: unknown) => caught);
      return { code: (error as { code?: unknown }).code, message: (error as { body?: { message?: string } }).body?.message };
    };
    expect(await refused(fixed(await appToken(STORAGE)))).toEqual({
      code: 401,
      message: expect.stringMatching(/Provided AAD token is intended for \[https:\/\/storage/),
    });
    expect(await refused(fixed(await appToken(emulator.endpoint.replace(/\/$/, ''), -60)))).toEqual({
      code: 401,
      message: expect.stringMatching(/Provided AAD token has been expired since/),
    });
    // The account's tenant only, as a Cosmos DB account takes the tokens of the tenant it belongs to.
    expect(await refused(fixed(await appToken(emulator.endpoint.replace(/\/$/, ''), 3600, LOCAL_OTHER_TENANT_ID)))).toEqual({
      code: 401,
      message: expect.stringMatching(/failed its tenant check/),
    });
    const claims = decodeJwt(await appToken(emulator.endpoint.replace(/\/$/, '')));
    expect(await refused(fixed(await forged(claims)))).toEqual({ code: 401, message: expect.stringMatching(/failed its signature check/) });
    expect(await refused(fixed(await appToken(keyless.endpoint.replace(/\/$/, ''))), keyless)).toMatchObject({ code: 401 });
  });
});

describe("Azurite's basic OAuth", () => {
  let azurite: AzuriteQueue;

  beforeAll(async () => {
    azurite = await startOAuthAzurite(tls);
  });

  afterAll(() => azurite?.close());

  const queue = (credential: TokenCredential) => new QueueServiceClient(azurite.queueEndpoint, credential).getQueueClient(`q-${randomUUID().slice(0, 8)}`);

  it("takes the managed identity's storage tokens over HTTPS", async () => {
    expect(azurite.queueEndpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/devstoreaccount1$/);
    const client = queue(new ManagedIdentityCredential({ clientId: USER_ASSIGNED }));
    await client.create();
    await client.sendMessage('hello');
    expect((await client.receiveMessages()).receivedMessageItems.map((message) => message.messageText)).toEqual(['hello']);
  });

  it('refuses a token for another audience and an expired one (it checks no signature)', async () => {
    const status = (token: string) =>
      queue(fixed(token))
        .create()
        .then(
          () => 201,
          (error: { statusCode?: number; details?: { errorCode?: string } }) => `${error.statusCode} ${error.details?.errorCode}`,
        );
    expect(await status(await appToken('https://cosmos.azure.com'))).toBe('403 AuthenticationFailed');
    expect(await status(await appToken(STORAGE, -60))).toBe('403 AuthenticationFailed');
    expect(await status(await appToken(STORAGE))).toBe(201);
  });
});
