/**
 * The app with identity-based connections only, as it runs in Azure: the built app in a host of this file's own,
 * given no connection string and no key, only `COSMOS_CONNECTION__accountEndpoint` and `AzureWebJobsStorage__queueServiceUri`
 * (each with its user-assigned identity) and App Service's IDENTITY_ENDPOINT and IDENTITY_HEADER. Every Cosmos DB and
 * queue request, the app's and its triggers', signs in with a token of the identity provider's managed identity endpoint,
 * which an embedded Cosmos DB that checks Entra tokens and an Azurite with OAuth take.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { AzuriteQueue } from '../../local/storage/azurite.js';
import { startCosmosEmulator, type CosmosEmulator } from '../../local/cosmos/emulator.js';
import { startIdentityProvider, type IdentityProvider } from '../../local/identity/provider.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../tools/webhook-receiver.js';
import { startOAuthAzurite } from '../support/oauth-azurite.js';
import { startOwnHost, stopOwnHosts, type OwnHost } from '../support/own-hosts.js';
import { apiAt, CLIENT_ID, uniqueEmail } from '../support/stack.js';

const TENANT = randomUUID();
const SYSTEM_ASSIGNED = randomUUID();
const COSMOS_IDENTITY = randomUUID();
const STORAGE_IDENTITY = randomUUID();
const STORAGE = 'https://storage.azure.com';
// The certificate the hosts of the tests trust (NODE_EXTRA_CA_CERTS).
const tls = inject('trustedTls');

let provider: IdentityProvider;
let cosmos: CosmosEmulator;
let azurite: AzuriteQueue;
let host: OwnHost;
let receiver: WebhookReceiver;

beforeAll(async () => {
  const managedIdentities = { systemAssigned: SYSTEM_ASSIGNED, userAssigned: [COSMOS_IDENTITY, STORAGE_IDENTITY] };
  provider = await startIdentityProvider({ tenants: [TENANT], clientId: CLIENT_ID, tls, managedIdentities });
  cosmos = await startCosmosEmulator({
    port: 0,
    host: '127.0.0.1',
    database: 'lms',
    tls,
    entra: { keys: provider.keys, authorityHost: provider.authorityHost, tenantId: TENANT },
  });
  azurite = await startOAuthAzurite(tls);
  // The first attempt fails: the retry goes on the queue, the one way a delivery takes through storage.
  receiver = await startWebhookReceiver({ answer: (_delivery, index) => (index === 0 ? 500 : 200) });
  host = await startOwnHost({
    AUTH_TENANT_ID: TENANT,
    AUTH_CLIENT_ID: CLIENT_ID,
    AUTH_AUTHORITY_HOST: provider.authorityHost,
    COSMOS_CONNECTION__accountEndpoint: cosmos.endpoint,
    COSMOS_CONNECTION__clientId: COSMOS_IDENTITY,
    COSMOS_DATABASE: 'lms',
    AzureWebJobsStorage__queueServiceUri: azurite.queueEndpoint,
    AzureWebJobsStorage__credential: 'managedidentity',
    AzureWebJobsStorage__clientId: STORAGE_IDENTITY,
    ...provider.managedIdentity,
    CURSOR_SIGNING_KEY: randomBytes(32).toString('base64'),
    RAG_QUEUE_NAME: 'rag-index-jobs',
    WEBHOOKS_QUEUE_NAME: 'webhook-deliveries',
    // No sweep: a delivery can only come through the change feed and the queue.
    WEBHOOKS_SWEEP_SCHEDULE: '0 0 0 1 1 *',
    WEBHOOKS_ALLOW_LOOPBACK: 'true',
    WEBHOOKS_RETRY_SCHEDULE: '1s',
    AzureFunctionsJobHost__extensions__queues__maxPollingInterval: '00:00:00.2',
  });
});

afterAll(async () => {
  await stopOwnHosts();
  await receiver?.close();
  await azurite?.close();
  await cosmos?.close();
  await provider?.close();
});

it("creates and reads back over the API, and delivers the webhook, every hop signed in as the connection's managed identity", async () => {
  const call = apiAt(host.url);
  const token = await provider.issueToken({ tenantId: TENANT, kind: 'user', roles: ['LMS.Admin'] });
  const subscribed = await call('POST', '/webhooks', { token, body: { url: receiver.url, events: ['project.created'] } });
  expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);
  const created = await call('POST', '/projects', { token, body: { name: 'By identity', owner: uniqueEmail('identity') } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const read = await call('GET', `/projects/${created.body.id}`, { token });
  expect(read).toMatchObject({ status: 200, body: created.body });

  // The change feed trigger read the change and made the first attempt; the app put the retry on the queue, and the
  // queue trigger took it for the second (no sweep runs): all by token.
  const about = (delivery: { body: string }) => (JSON.parse(delivery.body) as { data: { id: string } }).data.id === created.body.id;
  const deliveries = (await receiver.waitFor((received) => received.filter(about).length >= 2)).filter(about);
  expect(deliveries.map((delivery) => JSON.parse(delivery.body))).toEqual([
    expect.objectContaining({ type: 'project.created' }),
    JSON.parse(deliveries[0]!.body),
  ]);
  expect(deliveries[1]!.headers['webhook-id']).toBe(deliveries[0]!.headers['webhook-id']);

  // The user-assigned identity each connection's __clientId names, and no other, signed in.
  expect([...cosmos.entraClients]).toEqual([COSMOS_IDENTITY]);
  const askedFor = (resource: string) =>
    new Set(provider.managedIdentityTokens.filter((issued) => issued.resource === resource).map((issued) => issued.clientId));
  expect(askedFor(cosmos.endpoint.replace(/\/$/, ''))).toEqual(new Set([COSMOS_IDENTITY]));
  expect(askedFor(STORAGE)).toEqual(new Set([STORAGE_IDENTITY]));
  expect(provider.managedIdentityTokens.map((issued) => issued.clientId)).not.toContain(SYSTEM_ASSIGNED);
});
