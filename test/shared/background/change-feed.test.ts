/**
 * What a committed change sets going (shared/background/change-feed.ts), in process: the embedded Cosmos store of the local
 * stack and an Azurite, both started by this file, and webhook receivers on loopback. Changes are made
 * with the app's own repositories and read back from the store's change feed, a tenant's partition at a
 * time, as the trigger hands them over; a page is handed over again as the trigger does when an
 * invocation failed. The webhooks queue's messages are taken and handed to its function's work
 * (`attempt`) as its trigger would. The store is reached through a proxy (test/support/cosmos-proxy.ts)
 * and the queue through a front (test/support/queue-front.ts), so that a test can fail either.
 */
import { randomBytes } from 'node:crypto';
import { ChangeFeedStartFrom } from '@azure/cosmos';
import { QueueServiceClient, type QueueClient } from '@azure/storage-queue';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAzuriteQueue, type AzuriteQueue } from '../../../local/storage/azurite.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../../tools/webhook-receiver.js';
import type { Principal } from '../../../shared/auth/principal.js';
import { CONTAINERS } from '../../../shared/data/containers.js';
import { ping, readDelivery, retryDelivery } from '../../../shared/data/deliveries-repository.js';
import { createProject } from '../../../shared/data/projects-repository.js';
import { createJob, readJobDocument } from '../../../shared/data/rag-jobs-repository.js';
import { createTask } from '../../../shared/data/tasks-repository.js';
import { createWebhook, updateWebhook } from '../../../shared/data/webhooks-repository.js';
import { isDue, relayChanges } from '../../../shared/background/change-feed.js';
import { webhookMessage, type CreateWebhookBody, type WebhookMessage } from '../../../shared/schemas/webhooks.js';
import { attempt } from '../../../shared/background/webhooks-queue.js';
import { STORE_FAILURE } from '../../support/cosmos-proxy.js';
import { embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';
import { messagesTaken, type QueueFront, startQueueFront, visibleMessages } from '../../support/queue-front.js';

const RAG_QUEUE = 'relay-rag';
const WEBHOOKS_QUEUE = 'relay-webhooks';
/** A failed attempt's retry is due this late: far beyond the time between two steps of a test on a busy machine. */
const RETRY_AFTER_SECONDS = 60;

const embedded = embeddedStoreForTests();
let azurite: AzuriteQueue;
let front: QueueFront;
let ragQueue: QueueClient;
let webhooksQueue: QueueClient;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  azurite = await startAzuriteQueue();
  front = await startQueueFront(azurite);
  Object.assign(process.env, {
    AzureWebJobsStorage: front.connectionString,
    RAG_QUEUE_NAME: RAG_QUEUE,
    WEBHOOKS_QUEUE_NAME: WEBHOOKS_QUEUE,
    WEBHOOKS_ALLOW_LOOPBACK: 'true',
    WEBHOOKS_RETRY_SCHEDULE: `${RETRY_AFTER_SECONDS}s`,
  });
  const queues = QueueServiceClient.fromConnectionString(azurite.connectionString);
  ragQueue = queues.getQueueClient(RAG_QUEUE);
  webhooksQueue = queues.getQueueClient(WEBHOOKS_QUEUE);
});
afterEach(() => {
  front.answer = undefined;
});
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  await front?.close();
  await azurite?.close();
});

/** A receiver on loopback answering each delivery with what `answer` gives (200 by default). */
async function receiver(answer?: (index: number) => number | Promise<number>): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver(answer ? { answer: (_delivery, index) => answer(index) } : {});
  receivers.push(started);
  return started;
}

/** What a receiver got: each delivery's event type and the id of what it is about. */
const got = (at: WebhookReceiver) =>
  at.received.map((delivery) => {
    const payload = JSON.parse(delivery.body) as { type: string; data: { id: string } };
    return { type: payload.type, id: payload.data.id };
  });

/** A subscription of the tenant to these events, delivered to `at`; its id. */
async function subscribe(principal: Principal, at: WebhookReceiver, events: NonNullable<CreateWebhookBody['events']>): Promise<string> {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const created = await createWebhook(principal.tenantId, principal.objectId, { url: at.url, events }, secret, events, undefined);
  return created.resource.id;
}

/** The tenant's partition of the change feed: each call answers the changes since the last (the latest version of each document). */
function changesOf(tenantId: string): () => Promise<unknown[]> {
  const feed = embedded.cosmos.client
    .database('lms')
    .container(CONTAINERS.tenantData.id)
    .items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(tenantId) });
  return async () => {
    const changes: unknown[] = [];
    for (;;) {
      const page = await feed.readNext();
      if (page.result.length === 0) return changes;
      changes.push(...(page.result as unknown[]));
    }
  };
}

const ofType = (changes: unknown[], type: string) => changes.filter((change) => (change as { type: string }).type === type) as { id: string }[];

/** Every attempt the webhooks queue took, of every message. */
const attemptsQueued = () => messagesTaken<WebhookMessage>(front, WEBHOOKS_QUEUE).flatMap(({ message }) => message.attempts);

/** Hands over what the tenant's change feed shows, page after page, until it shows nothing new: events, then their deliveries. */
async function relayAll(changes: () => Promise<unknown[]>): Promise<void> {
  for (let page = await changes(); page.length > 0; page = await changes()) expect(await relayChanges(page)).toEqual([]);
}

/**
 * The webhooks queue's trigger, once: takes every message visible now, of any test, and hands each to
 * its work. Answers the attempts it took.
 */
async function deliverQueued(): Promise<WebhookMessage['attempts']> {
  const taken: WebhookMessage['attempts'] = [];
  for (;;) {
    const { receivedMessageItems } = await webhooksQueue.receiveMessages({ numberOfMessages: 32 });
    if (receivedMessageItems.length === 0) return taken;
    await Promise.all(
      receivedMessageItems.map(async (item) => {
        const message = webhookMessage.parse(JSON.parse(Buffer.from(item.messageText, 'base64').toString('utf8')));
        taken.push(...message.attempts);
        await attempt(message);
        await webhooksQueue.deleteMessage(item.messageId, item.popReceipt);
      }),
    );
  }
}

describe('an event in the change feed', () => {
  it('has its deliveries made, one per active subscription that asked for it, however often its change is handed over; each arrives once', async () => {
    const principal = adminCaller();
    const [first, second, otherEvents, switchedOff] = [await receiver(), await receiver(), await receiver(), await receiver()];
    await subscribe(principal, first, ['project.created']);
    await subscribe(principal, second, ['task.created', 'project.created']);
    await subscribe(principal, otherEvents, ['task.created']);
    const off = await subscribe(principal, switchedOff, ['project.created']);
    await updateWebhook(principal.tenantId, off, { active: false }, undefined);
    const project = (await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Relayed' }, undefined)).resource;
    const changes = changesOf(principal.tenantId);

    const page = await changes();
    expect(ofType(page, 'event')).toHaveLength(1);
    expect(await relayChanges(page)).toEqual([]);
    expect(await relayChanges(page)).toEqual([]);

    // The feed's next look shows the deliveries, due: their attempts go on the queue.
    const made = await changes();
    expect(ofType(made, 'delivery')).toHaveLength(2);
    expect(await relayChanges(made)).toEqual([]);
    expect(await deliverQueued()).toHaveLength(2);
    for (const subscribed of [first, second]) expect(got(subscribed)).toEqual([{ type: 'project.created', id: project.id }]);
    expect(got(otherEvents)).toEqual([]);
    expect(got(switchedOff)).toEqual([]);

    // Then it shows them claimed and ended: nothing more to do.
    await relayAll(changes);
    expect(await deliverQueued()).toEqual([]);
    expect([first, second].map((subscribed) => subscribed.received.length)).toEqual([1, 1]);
  });

  it("of every tenant on a page goes to that tenant's subscriptions, all of them", async () => {
    const [one, two] = [adminCaller(), adminCaller()];
    const [ofOne, ofTwo] = [await receiver(), await receiver()];
    await subscribe(one, ofOne, ['project.created', 'task.created']);
    await subscribe(two, ofTwo, ['project.created', 'task.created']);
    const project = (await createProject(one.tenantId, one.objectId, one.email!, { name: 'First' }, undefined)).resource;
    const task = (await createTask(one.tenantId, one.objectId, { projectId: project.id, title: 'Its task' }, undefined)).resource;
    const other = (await createProject(two.tenantId, two.objectId, two.email!, { name: 'Second' }, undefined)).resource;
    const [changesOfOne, changesOfTwo] = [changesOf(one.tenantId), changesOf(two.tenantId)];

    expect(await relayChanges([...(await changesOfOne()), ...(await changesOfTwo())])).toEqual([]);
    expect(await relayChanges([...(await changesOfOne()), ...(await changesOfTwo())])).toEqual([]);
    await deliverQueued();
    expect(got(ofOne)).toEqual(
      expect.arrayContaining([
        { type: 'project.created', id: project.id },
        { type: 'task.created', id: task.id },
      ]),
    );
    expect(ofOne.received).toHaveLength(2);
    expect(got(ofTwo)).toEqual([{ type: 'project.created', id: other.id }]);
  });

  it("of a ping sets nothing going by itself: the ping's delivery, due at once, has its attempt queued, and arrives once", async () => {
    const principal = adminCaller();
    const pinged = await receiver();
    const id = await subscribe(principal, pinged, ['project.created']);
    await ping(principal.tenantId, id);
    const changes = await changesOf(principal.tenantId)();
    const [event] = ofType(changes, 'event');
    const [delivery] = ofType(changes, 'delivery');

    expect(await relayChanges([event])).toEqual([]);
    expect(attemptsQueued().filter(({ deliveryId }) => deliveryId === delivery!.id)).toEqual([]);
    expect(await relayChanges([delivery])).toEqual([]);
    expect(await relayChanges([delivery])).toEqual([]);
    await deliverQueued();
    expect(got(pinged)).toEqual([{ type: 'webhook.ping', id }]);
  });
});

describe('the relay, while a receiver hangs', () => {
  it('hands over page after page and calls no receiver: its pages are done while an attempt waits for its answer', async () => {
    const principal = adminCaller();
    let answer!: (status: number) => void;
    const answered = new Promise<number>((resolve) => (answer = resolve));
    let relaying = false;
    let calledWhileRelaying!: (why: string) => void;
    const called = new Promise<string>((resolve) => (calledWhileRelaying = resolve));
    const hanging = await receiver(() => {
      if (relaying) calledWhileRelaying('a receiver called by the relay');
      return answered;
    });
    await subscribe(principal, hanging, ['project.created']);
    const changes = changesOf(principal.tenantId);
    /** Hands over what the feed shows: done, unless the relay calls a receiver meanwhile. */
    const handOver = async () => {
      relaying = true;
      const outcome = await Promise.race([relayAll(changes).then(() => 'handed over'), called]);
      relaying = false;
      return outcome;
    };

    await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Waits for its answer' }, undefined);
    expect(await handOver()).toBe('handed over');
    // The queue's trigger makes the attempt, which the receiver holds.
    const attempting = deliverQueued();
    await hanging.waitFor((received) => received.length === 1);

    await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Handed over meanwhile' }, undefined);
    expect(await handOver()).toBe('handed over');
    expect(hanging.received).toHaveLength(1);
    expect(attemptsQueued().filter(({ tenantId }) => tenantId === principal.tenantId)).toHaveLength(2);

    answer(200);
    await attempting;
    expect(hanging.received).toHaveLength(2);
  });
});

describe('a delivery in the change feed', () => {
  it('is left to its queue message while its retry is not due, and its attempt queued when a retry is asked for', async () => {
    const principal = adminCaller();
    const failingFirst = await receiver((index) => (index === 0 ? 500 : 200));
    const webhookId = await subscribe(principal, failingFirst, ['project.created']);
    await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Retried' }, undefined);
    const changes = changesOf(principal.tenantId);
    await relayChanges(await changes());
    await relayChanges(await changes());
    await deliverQueued();
    expect(failingFirst.received).toHaveLength(1);

    // The failed attempt, recorded: its retry is due in RETRY_AFTER_SECONDS, and waits on the webhooks queue.
    const recorded = await changes();
    const [delivery] = ofType(recorded, 'delivery');
    expect(delivery).toMatchObject({ status: 'Pending', attempts: 1 });
    const [storeRequests, queueRequests] = [embedded.store.requests.length, front.requests.length];
    expect(await relayChanges(recorded)).toEqual([]);
    // Left alone: nothing read, nothing queued.
    expect(embedded.store.requests.slice(storeRequests)).toEqual([]);
    expect(front.requests.slice(queueRequests)).toEqual([]);
    const retry = { tenantId: principal.tenantId, deliveryId: delivery!.id, attempt: 2 };
    const retries = () =>
      messagesTaken<WebhookMessage>(front, WEBHOOKS_QUEUE).filter(({ message }) => JSON.stringify(message.attempts).includes(JSON.stringify(retry)));
    expect(retries()).toEqual([{ message: { attempts: [retry] }, delaySeconds: expect.closeTo(RETRY_AFTER_SECONDS, -1) as number }]);

    // The receiver's owner asks for it again: due now, queued at once.
    await retryDelivery(principal.tenantId, webhookId, delivery!.id);
    expect(await relayChanges(await changes())).toEqual([]);
    expect(retries().at(-1)).toEqual({ message: { attempts: [retry] }, delaySeconds: 0 });
    await deliverQueued();
    expect(failingFirst.received).toHaveLength(2);
    expect(await readDelivery(principal.tenantId, delivery!.id)).toMatchObject({ status: 'Succeeded', attempts: 2 });
  });
});

describe('a RAG job in the change feed', () => {
  it('is put on the RAG queue once while it is Queued, and left alone once the feed shows it dispatched', async () => {
    const principal = adminCaller();
    const { jobId } = (await createJob(principal.tenantId, principal.objectId, { mode: 'incremental' }, undefined)).resource;
    const changes = changesOf(principal.tenantId);
    expect(await relayChanges(await changes())).toEqual([]);
    const dispatched = await changes();
    expect(ofType(dispatched, 'ragJob')).toEqual([expect.objectContaining({ id: jobId, status: 'Queued', dispatched: true })]);
    expect(await relayChanges(dispatched)).toEqual([]);
    expect((await visibleMessages(ragQueue)).filter((message) => (message as { jobId: string }).jobId === jobId)).toEqual([
      { tenantId: principal.tenantId, jobId },
    ]);
  });
});

describe('a page of changes whose work fails', () => {
  it('fails for the trigger to retry once the rest is handed over; handed over again, it finishes the work once', async () => {
    const principal = adminCaller();
    const subscribed = await receiver();
    await subscribe(principal, subscribed, ['project.created']);
    const project = (await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Despite the queue' }, undefined)).resource;
    const { jobId } = (await createJob(principal.tenantId, principal.objectId, { mode: 'incremental' }, undefined)).resource;
    const changes = changesOf(principal.tenantId);
    const page = await changes();

    front.answer = (request) => (request.path.startsWith(`/${RAG_QUEUE}`) ? 503 : undefined);
    await expect(relayChanges(page)).rejects.toMatchObject({ name: 'DependencyUnavailableError', dependency: 'queue' });
    expect((await readJobDocument(principal.tenantId, jobId))!.dispatched).toBeUndefined();

    front.answer = undefined;
    expect(await relayChanges(page)).toEqual([]);
    await relayAll(changes);
    await deliverQueued();
    expect(got(subscribed)).toEqual([{ type: 'project.created', id: project.id }]);
    expect((await visibleMessages(ragQueue)).filter((message) => (message as { jobId: string }).jobId === jobId)).toHaveLength(1);
    expect((await readJobDocument(principal.tenantId, jobId))!.dispatched).toBe(true);
  });

  it('fails when the webhooks queue refuses a due delivery’s attempt; handed over again, the attempt is queued and made once', async () => {
    const principal = adminCaller();
    const subscribed = await receiver();
    await subscribe(principal, subscribed, ['project.created']);
    const project = (await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Queue down' }, undefined)).resource;
    const changes = changesOf(principal.tenantId);
    expect(await relayChanges(await changes())).toEqual([]);
    const due = await changes();

    front.answer = (request) => (request.path.startsWith(`/${WEBHOOKS_QUEUE}`) ? 503 : undefined);
    await expect(relayChanges(due)).rejects.toMatchObject({ name: 'DependencyUnavailableError', dependency: 'queue' });
    front.answer = undefined;
    expect(await relayChanges(due)).toEqual([]);
    await deliverQueued();
    expect(got(subscribed)).toEqual([{ type: 'project.created', id: project.id }]);
  });

  it('fails when the store fails to make the deliveries; handed over again, each subscription gets the event once', async () => {
    const principal = adminCaller();
    const [first, second] = [await receiver(), await receiver()];
    await subscribe(principal, first, ['project.created']);
    await subscribe(principal, second, ['project.created']);
    await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Despite the store' }, undefined);
    const changes = changesOf(principal.tenantId);
    const page = await changes();

    embedded.store.intercept = (record) => {
      if (!(record.method === 'POST' && record.body.includes('"type":"delivery"'))) return undefined;
      embedded.store.intercept = undefined;
      return STORE_FAILURE;
    };
    await expect(relayChanges(page)).rejects.toThrow();
    expect(ofType(await changes(), 'delivery')).toEqual([]);

    expect(await relayChanges(page)).toEqual([]);
    await relayAll(changes);
    await deliverQueued();
    expect([first, second].map((subscribed) => subscribed.received.length)).toEqual([1, 1]);
  });
});

describe('the relay', () => {
  it('leaves alone, and names, a document of a relayed kind that is not as the app writes it, and ignores every other kind', async () => {
    const changes = [
      { id: 'PRJ-1001', tenantId: 't', type: 'project', name: 'Not relayed' },
      { id: 'msg_broken', tenantId: 't', type: 'event', eventType: 'project.sung', timestamp: '2026-11-25T10:00:00.000Z', _etag: 'e' },
      { id: 'msg_nameless', tenantId: '', type: 'event', eventType: 'project.created', timestamp: '2026-11-25T10:00:00.000Z', _etag: 'e' },
      { id: 'dlv_broken', tenantId: 't', type: 'delivery', status: 'Pending', _etag: 'e' },
      { id: 'job', type: 'ragJob', status: 'Queued', _etag: 'e' },
      null,
      'text',
    ];
    const [toStore, toQueue] = [embedded.store.requests.length, front.requests.length];
    await expect(relayChanges(changes)).resolves.toEqual(['msg_broken', 'msg_nameless', 'dlv_broken', 'job']);
    expect([embedded.store.requests.length, front.requests.length]).toEqual([toStore, toQueue]);
  });
});

describe('isDue', () => {
  it('is true for a Pending delivery whose attempt time has come, or comes within the early allowance, and for nothing else', () => {
    const now = Date.parse('2026-01-01T00:00:10.000Z');
    expect(isDue({ status: 'Pending', nextAttemptAt: '2026-01-01T00:00:10.000Z' }, now)).toBe(true);
    expect(isDue({ status: 'Pending', nextAttemptAt: '2026-01-01T00:00:10.001Z' }, now)).toBe(false);
    expect(isDue({ status: 'Pending', nextAttemptAt: '2026-01-01T00:00:12.000Z' }, now, 2_000)).toBe(true);
    expect(isDue({ status: 'Pending', nextAttemptAt: '2026-01-01T00:00:12.001Z' }, now, 2_000)).toBe(false);
    expect(isDue({ status: 'Succeeded', nextAttemptAt: '2026-01-01T00:00:00.000Z' }, now)).toBe(false);
    expect(isDue({ status: 'Failed', nextAttemptAt: '2026-01-01T00:00:00.000Z' }, now)).toBe(false);
    expect(isDue({ status: 'Pending', nextAttemptAt: null }, now)).toBe(false);
    expect(isDue({ status: 'Pending', nextAttemptAt: new Date(Date.now() - 1).toISOString() })).toBe(true);
  });
});
