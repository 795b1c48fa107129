/**
 * Work put on the storage queues (shared/background/queues.ts) as the queue triggers take it, against an Azurite of
 * this file's own, read back with the real storage client: base64 JSON (host.json's messageEncoding),
 * visible after its delay, on the queue its settings name. A front between the app and Azurite
 * (test/support/queue-front.ts) records each request and can fail it, as a queue service that is down would.
 */
import { randomUUID } from 'node:crypto';
import { QueueServiceClient, type QueueClient } from '@azure/storage-queue';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { z } from 'zod';
import { ragIndexPoison } from '../../../functions/rag-index-poison.js';
import { ragIndexWorker } from '../../../functions/rag-index-worker.js';
import { webhooksDeliver } from '../../../functions/webhooks-deliver.js';
import { startAzuriteQueue, type AzuriteQueue } from '../../../local/storage/azurite.js';
import { startIdentityProvider } from '../../../local/identity/provider.js';
import { enqueueRagWork, enqueueWebhookWork, queueWork } from '../../../shared/background/queues.js';
import { ragJobMessage } from '../../../shared/schemas/rag.js';
import { webhookMessage } from '../../../shared/schemas/webhooks.js';
import { loggedInvocation } from '../../support/logged-invocation.js';
import { startOAuthAzurite } from '../../support/oauth-azurite.js';
import { type QueueFront, startQueueFront, visibleMessages } from '../../support/queue-front.js';

const RAG_QUEUE = 'rag-work';
const WEBHOOKS_QUEUE = 'webhook-work';

let azurite: AzuriteQueue;
let front: QueueFront;
let rag: QueueClient;
let webhooks: QueueClient;

beforeAll(async () => {
  azurite = await startAzuriteQueue();
  front = await startQueueFront(azurite);
  Object.assign(process.env, { AzureWebJobsStorage: front.connectionString, RAG_QUEUE_NAME: RAG_QUEUE, WEBHOOKS_QUEUE_NAME: WEBHOOKS_QUEUE });
  const service = QueueServiceClient.fromConnectionString(azurite.connectionString);
  rag = service.getQueueClient(RAG_QUEUE);
  webhooks = service.getQueueClient(WEBHOOKS_QUEUE);
});
beforeEach(async () => {
  for (const queue of [rag, webhooks]) {
    await queue.createIfNotExists();
    await queue.clearMessages();
  }
  front.requests.length = 0;
});
afterEach(() => {
  front.answer = undefined;
});
afterAll(async () => {
  await front?.close();
  await azurite?.close();
});

/** Messages on the queue, visible or not. */
const held = async (queue: QueueClient) => (await queue.getProperties()).approximateMessagesCount;

const messagesPut = () => front.requests.filter((request) => request.method === 'POST' && request.path.endsWith('/messages'));

describe('work put on the queues', () => {
  it("goes on the RAG queue as base64 JSON the RAG trigger's schema takes, visible at once", async () => {
    const message = { tenantId: randomUUID(), jobId: randomUUID(), batch: 3 };
    await enqueueRagWork(message);
    expect(await visibleMessages(rag)).toEqual([message]);
    expect(ragJobMessage.parse((await visibleMessages(rag))[0])).toEqual(message);
    expect(await held(webhooks)).toBe(0);
  });

  it("goes on the webhooks queue as base64 JSON the delivery trigger's schema takes", async () => {
    const message = { attempts: [{ tenantId: randomUUID(), deliveryId: `dlv_msg_${randomUUID().replaceAll('-', '')}_WHK-1`, attempt: 2 }] };
    await enqueueWebhookWork(message);
    expect(await visibleMessages(webhooks)).toEqual([message]);
    expect(webhookMessage.parse((await visibleMessages(webhooks))[0])).toEqual(message);
    expect(await held(rag)).toBe(0);
  });

  it('stays out of sight for its delay, a fraction of a second counting as a whole one, never less', async () => {
    await enqueueWebhookWork({ attempts: [{ tenantId: 't', deliveryId: 'dlv_x', attempt: 2 }] }, 300);
    await enqueueRagWork({ tenantId: 't', jobId: 'j' }, 0.2);
    expect(await visibleMessages(webhooks)).toEqual([]);
    expect(await held(webhooks)).toBe(1);
    expect(messagesPut().map((request) => request.query.get('visibilitytimeout'))).toEqual(['300', '1']);
  });

  it('is visible at once when its delay is already past (a retry worked out late)', async () => {
    const message = { attempts: [{ tenantId: 't', deliveryId: 'dlv_x', attempt: 3 }] };
    await enqueueWebhookWork(message, -1.5);
    expect(await visibleMessages(webhooks)).toEqual([message]);
  });

  it('makes the queue first when the service does not have it yet (a new storage account)', async () => {
    await rag.delete();
    const message = { tenantId: 't', jobId: 'j', finish: true as const };
    await enqueueRagWork(message);
    expect(await visibleMessages(rag)).toEqual([message]);
    expect(front.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      `POST /${RAG_QUEUE}/messages`,
      `PUT /${RAG_QUEUE}`,
      `POST /${RAG_QUEUE}/messages`,
    ]);
  });
});

describe('a queue that fails', () => {
  afterEach(() => vi.resetModules());

  it('is a DependencyUnavailableError of the queue after two tries, without making the queue, and sends nothing', async () => {
    // The client, and the retry policy it is made with, are made once a process: here, for this test.
    vi.resetModules();
    const queues = await import('../../../shared/background/queues.js');
    // The queue service fails the first two puts, and would take the next.
    front.answer = (request) => (request.method === 'POST' && messagesPut().length <= 2 ? 500 : undefined);
    await expect(queues.enqueueRagWork({ tenantId: 't', jobId: 'j' })).rejects.toMatchObject({ name: 'DependencyUnavailableError', dependency: 'queue' });
    expect(front.requests.map((request) => `${request.method} ${request.path}`)).toEqual([`POST /${RAG_QUEUE}/messages`, `POST /${RAG_QUEUE}/messages`]);
    expect(await held(rag)).toBe(0);
  });

  it('is a DependencyUnavailableError of the queue when it does not answer at all', async () => {
    front.answer = () => 'drop';
    await expect(enqueueWebhookWork({ attempts: [{ tenantId: 't', deliveryId: 'dlv_x', attempt: 2 }] })).rejects.toMatchObject({
      name: 'DependencyUnavailableError',
      dependency: 'queue',
    });
  });

  it('is a DependencyUnavailableError of the queue when the missing queue cannot be made', async () => {
    await webhooks.delete();
    front.answer = (request) => (request.method === 'PUT' ? 403 : undefined);
    await expect(enqueueWebhookWork({ attempts: [{ tenantId: 't', deliveryId: 'dlv_x', attempt: 2 }] })).rejects.toMatchObject({
      name: 'DependencyUnavailableError',
      dependency: 'queue',
    });
    expect(await webhooks.exists()).toBe(false);
  });
});

describe('the connection', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.resetModules();
  });

  it('that the storage library cannot read is the queue failing: a DependencyUnavailableError of the queue', async () => {
    vi.stubEnv('AzureWebJobsStorage', 'Not=a;storage=connection');
    vi.resetModules();
    const queues = await import('../../../shared/background/queues.js');
    // With the storage library's own reason, for whoever reads the log: it finds no queue endpoint URL in it.
    await expect(queues.enqueueRagWork({ tenantId: 't', jobId: 'j' })).rejects.toMatchObject({
      name: 'DependencyUnavailableError',
      dependency: 'queue',
      cause: { code: 'ERR_INVALID_URL' },
    });
  });

  it('by identity signs in as the identity its settings name, with no key, and the message arrives', async () => {
    const tls = inject('trustedTls');
    const tenant = randomUUID();
    const storageIdentity = randomUUID();
    const provider = await startIdentityProvider({
      tenants: [tenant],
      clientId: randomUUID(),
      tls,
      managedIdentities: { systemAssigned: randomUUID(), userAssigned: [storageIdentity] },
    });
    const secured = await startOAuthAzurite(tls);
    try {
      vi.stubEnv('AzureWebJobsStorage', undefined);
      vi.stubEnv('AzureWebJobsStorage__queueServiceUri', secured.queueEndpoint);
      vi.stubEnv('AzureWebJobsStorage__credential', 'managedidentity');
      vi.stubEnv('AzureWebJobsStorage__clientId', storageIdentity);
      for (const [name, value] of Object.entries(provider.managedIdentity!)) vi.stubEnv(name, value);
      vi.resetModules();
      const queues = await import('../../../shared/background/queues.js');
      const message = { tenantId: 't', jobId: 'j' };
      await queues.enqueueRagWork(message);
      const received = QueueServiceClient.fromConnectionString(secured.connectionString).getQueueClient(RAG_QUEUE);
      expect(await visibleMessages(received)).toEqual([message]);
      expect(provider.managedIdentityTokens.map((issued) => [issued.clientId, issued.resource])).toEqual([[storageIdentity, 'https://storage.azure.com']]);
    } finally {
      await secured.close();
      await provider.close();
    }
  });
});

/** The one failure policy of the queue-triggered functions for a message that does not fit their queue. */
describe('queue work', () => {
  it('hands a message that fits the schema to the work, parsed', async () => {
    const handled: unknown[] = [];
    const handler = queueWork(z.object({ jobId: z.string() }), 'test message', async (work) => void handled.push(work));
    const { invocation, lines } = loggedInvocation('queue-1', 'test-worker');
    await handler({ jobId: 'J-1', extra: true }, invocation);
    expect(handled).toEqual([{ jobId: 'J-1' }]);
    expect(lines).toEqual([]);
  });

  it('gives what the work throws back to the host, which retries the message', async () => {
    const handler = queueWork(z.object({ jobId: z.string() }), 'test message', () => Promise.reject(new Error('database away')));
    await expect(handler({ jobId: 'J-1' }, loggedInvocation('queue-2').invocation)).rejects.toThrow('database away');
  });

  it.each([
    ['rag-index-worker', ragIndexWorker, 'Dropping a RAG queue message that is not a job, a batch or a finishing'],
    ['rag-index-poison', ragIndexPoison, 'Dropping a poisoned RAG queue message that is not a job, a batch or a finishing'],
    ['webhooks-deliver', webhooksDeliver, 'Dropping a webhooks queue message that is not a delivery attempt'],
  ])('drops a message %s can never do, with a warning, instead of failing until it is poisoned', async (name, handler, warning) => {
    for (const message of ['not json work', { tenantId: 't' }, null]) {
      const { invocation, lines } = loggedInvocation('queue-3', name);
      await expect(handler(message, invocation)).resolves.toBeUndefined();
      expect(lines).toEqual([{ level: 'warning', text: warning }]);
    }
  });
});
