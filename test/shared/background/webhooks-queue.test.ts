/**
 * Webhook delivery (shared/background/: change-feed.ts, webhooks-queue.ts, webhooks-sweep.ts) driven in process against real parts this file
 * starts: the embedded Cosmos store of the local stack behind a proxy (test/support/cosmos-proxy.ts)
 * that can hold a request while something else happens first, a webhook receiver on loopback whose
 * answers each test picks, and an Azurite of the file's own behind a front
 * (test/support/queue-front.ts) that records each message with its visibility timeout, or refuses
 * it. The retry schedule is 30 s then 90 s: a test makes a delivery due by writing its due time, as
 * time passing would. A test hands `attempt` the message the queue would carry.
 */
import { randomUUID } from 'node:crypto';
import { QueueServiceClient } from '@azure/storage-queue';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAzuriteQueue, type AzuriteQueue } from '../../../local/storage/azurite.js';
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from '../../../tools/webhook-receiver.js';
import type { Principal } from '../../../shared/auth/principal.js';
import type { EventDocument } from '../../../shared/data/events.js';
import type { DeliveryDocument } from '../../../shared/data/deliveries-repository.js';
import type { WebhookDocument } from '../../../shared/data/webhooks-repository.js';
import type { WebhookMessage } from '../../../shared/schemas/webhooks.js';
import { embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';
import { startQueueFront, messagesTaken, type QueueFront } from '../../support/queue-front.js';
import { startSmallServer } from '../../support/small-server.js';
import { waitFor } from '../../support/wait.js';

const WEBHOOKS_QUEUE = 'webhooks-test';
const FIRST_RETRY_S = 30;
const SECOND_RETRY_S = 90;

const embedded = embeddedStoreForTests();
let azurite: AzuriteQueue;
/** Azurite's queues, reached through a front that records each message and can refuse it. */
let front: QueueFront;
let receiver: WebhookReceiver;
/** The receiver's answers to the requests to come, in order; past them it answers 200. */
const answers: (number | Promise<number>)[] = [];

beforeAll(async () => {
  azurite = await startAzuriteQueue();
  front = await startQueueFront(azurite);
  receiver = await startWebhookReceiver({ answer: () => answers.shift() ?? 200 });
  Object.assign(process.env, {
    AzureWebJobsStorage: front.connectionString,
    WEBHOOKS_QUEUE_NAME: WEBHOOKS_QUEUE,
    WEBHOOKS_RETRY_SCHEDULE: `${FIRST_RETRY_S}s,${SECOND_RETRY_S}s`,
    WEBHOOKS_ALLOW_LOOPBACK: 'true',
  });
});
afterEach(() => {
  front.answer = undefined;
  answers.length = 0;
});
afterAll(async () => {
  await receiver?.close();
  await front?.close();
  await azurite?.close();
});

const deliveries = async () => ({
  ...(await import('../../../shared/background/change-feed.js')),
  ...(await import('../../../shared/background/webhooks-queue.js')),
  ...(await import('../../../shared/background/webhooks-sweep.js')),
});
const repository = () => import('../../../shared/data/deliveries-repository.js');
const tenantData = async () => (await import('../../../shared/data/tenant-data.js')).tenantData();

/** A subscription of the tenant to project.created, at the receiver (at `url` if given), with its secret. */
async function subscription(principal: Principal, url = receiver.url): Promise<WebhookDocument> {
  const { createWebhook, readWebhook } = await import('../../../shared/data/webhooks-repository.js');
  const { newSecret } = await import('../../../shared/webhooks/signing.js');
  const { resource } = await createWebhook(principal.tenantId, principal.objectId, { url }, newSecret(), ['project.created'], undefined);
  return (await readWebhook(principal.tenantId, resource.id))!;
}

/** A project.created event of the tenant, stored as a change writes it. */
async function storedEvent(tenantId: string, data: Record<string, unknown> = { id: `PRJ-${randomUUID()}` }): Promise<EventDocument> {
  const { eventDocument } = await import('../../../shared/data/events.js');
  const { resource } = await (await tenantData()).items.create(eventDocument(tenantId, { type: 'project.created', data }));
  return resource as unknown as EventDocument;
}

/** Changes a stored document as another writer (or time passing) would. */
async function change<D extends { id: string; tenantId: string }>(document: D, fields: Partial<D>): Promise<D> {
  const { resource } = await (await tenantData()).item(document.id, document.tenantId).read<D>();
  const { resource: replaced } = await (await tenantData()).item(document.id, document.tenantId).replace({ ...resource!, ...fields });
  return replaced as unknown as D;
}

async function deliveryOf(event: EventDocument, webhook: WebhookDocument): Promise<DeliveryDocument | undefined> {
  const { readDelivery, deliveryIdOf } = await repository();
  return readDelivery(event.tenantId, deliveryIdOf(event.id, webhook.id));
}

/** A delivery made as the relay makes it, not attempted: due `dueInMs` from now (negative: overdue). */
async function madeDelivery(event: EventDocument, webhook: WebhookDocument, dueInMs = 0): Promise<DeliveryDocument> {
  const { makeDeliveries, deliveriesOf, readDelivery } = await repository();
  const [document] = deliveriesOf(event, [webhook]);
  await makeDeliveries(event.tenantId, [document!]);
  const made = (await readDelivery(event.tenantId, document!.id))!;
  return dueInMs ? change(made, { nextAttemptAt: new Date(Date.now() + dueInMs).toISOString() }) : made;
}

/** A tenant of its own, subscribed at the receiver, with one event stored and its delivery made. */
async function subscribedTenant() {
  const principal = adminCaller();
  const webhook = await subscription(principal);
  const event = await storedEvent(principal.tenantId);
  const delivery = await madeDelivery(event, webhook);
  return { principal, tenantId: principal.tenantId, webhook, event, delivery };
}

/** The next attempt of the delivery, as its queue message asks for it. */
async function attemptNext(delivery: Pick<DeliveryDocument, 'tenantId' | 'id' | 'attempts'>, attemptNumber = delivery.attempts + 1): Promise<void> {
  await (await deliveries()).attempt({ attempts: [{ tenantId: delivery.tenantId, deliveryId: delivery.id, attempt: attemptNumber }] });
}

/** A delivery, of a tenant of its own, whose first attempt got a 500: Pending, attempt 2 queued; made due now unless told otherwise. */
async function failedOnce(dueInMs = 0) {
  const { tenantId, webhook, event, delivery: made } = await subscribedTenant();
  answers.push(500);
  await attemptNext(made);
  const delivery = await change((await deliveryOf(event, webhook))!, { nextAttemptAt: new Date(Date.now() + dueInMs).toISOString() });
  return { tenantId, webhook, event, delivery };
}

const requestsFor = (event: EventDocument): ReceivedDelivery[] => receiver.received.filter((request) => request.headers['webhook-id'] === event.id);
/** The messages the queue took with an attempt of the delivery. */
const messagesFor = (delivery: Pick<DeliveryDocument, 'id'>) =>
  messagesTaken<WebhookMessage>(front, WEBHOOKS_QUEUE).filter((entry) => entry.message.attempts.some(({ deliveryId }) => deliveryId === delivery.id));
const readWebhookDocument = async (webhook: WebhookDocument) =>
  (await import('../../../shared/data/webhooks-repository.js')).readWebhook(webhook.tenantId, webhook.id);
const secondsFromNow = (iso: string | null) => (Date.parse(iso!) - Date.now()) / 1000;

/** Whether the request carries a valid signature of `secret`, as the Standard Webhooks library checks it. */
function signedWith(request: ReceivedDelivery, secret: string): boolean {
  try {
    new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

/** Resolves when released: a receiver's answer, or a held store request, that waits for the test. */
function gate<T>() {
  let release!: (value: T) => void;
  const released = new Promise<T>((resolve) => (release = resolve));
  return { release, released };
}

/** Attempts the delivery and waits for the attempt at the receiver, which answers when the test releases `answer`. */
async function attemptAtReceiver(delivery: DeliveryDocument, event: EventDocument) {
  const answer = gate<number>();
  answers.push(answer.released);
  const attempting = attemptNext(delivery);
  await waitFor(() => requestsFor(event).length === 1);
  return { answer, attempting };
}

/** The webhooks queue emptied, as its trigger would have left it. */
const emptyQueue = () => QueueServiceClient.fromConnectionString(azurite.connectionString).getQueueClient(WEBHOOKS_QUEUE).clearMessages();

/** Every delivery still Pending in the store, of any test, ended, and the queue emptied: a sweep then sees only the test's own. */
async function endPendingDeliveries() {
  await emptyQueue();
  const { resources } = await (
    await tenantData()
  ).items
    .query<DeliveryDocument>("SELECT * FROM c WHERE c.type = 'delivery' AND c.status = 'Pending'")
    .fetchAll();
  for (const pending of resources) await change(pending, { status: 'Failed', nextAttemptAt: null });
}

describe('makeDeliveriesOf', () => {
  it('makes each event’s deliveries to its subscriptions, due at once, and sends nothing: no request, no message', async () => {
    const principal = adminCaller();
    const first = await subscription(principal, `${receiver.url}?to=first`);
    const second = await subscription(principal, `${receiver.url}?to=second`);
    const events = [await storedEvent(principal.tenantId, { id: 'PRJ-1' }), await storedEvent(principal.tenantId, { id: 'PRJ-2' })];
    const [requests, messages] = [receiver.received.length, front.requests.length];

    await (await deliveries()).makeDeliveriesOf(principal.tenantId, events);

    for (const event of events) {
      for (const webhook of [first, second]) {
        const delivery = (await deliveryOf(event, webhook))!;
        expect(delivery).toMatchObject({ status: 'Pending', attempts: 0 });
        expect(secondsFromNow(delivery.nextAttemptAt)).toBeLessThanOrEqual(0);
      }
    }
    expect([receiver.received.length, front.requests.length]).toEqual([requests, messages]);
  });

  it('leaves as they are the deliveries of events handed over again', async () => {
    const { tenantId, webhook, event } = await subscribedTenant();
    await attemptNext((await deliveryOf(event, webhook))!);
    const attempted = await deliveryOf(event, webhook);

    await (await deliveries()).makeDeliveriesOf(tenantId, [event]);

    expect(await deliveryOf(event, webhook)).toEqual(attempted);
    expect(requestsFor(event)).toHaveLength(1);
  });
});

describe('queueDue', () => {
  it('puts the next attempt of each delivery on the webhooks queue, of any tenant, in one message visible at once, and calls no receiver', async () => {
    const due = await subscribedTenant();
    const retried = await failedOnce();
    const requests = receiver.received.length;

    await (await deliveries()).queueDue([due.delivery, retried.delivery]);

    const attempts = [
      { tenantId: due.tenantId, deliveryId: due.delivery.id, attempt: 1 },
      { tenantId: retried.tenantId, deliveryId: retried.delivery.id, attempt: 2 },
    ];
    expect(messagesFor(due.delivery)).toEqual([{ message: { attempts }, delaySeconds: 0 }]);
    expect(receiver.received.length).toBe(requests);
  });

  it('puts up to 50 attempts in a message', async () => {
    const { ATTEMPTS_PER_MESSAGE } = await import('../../../shared/schemas/webhooks.js');
    const { webhook, event } = await subscribedTenant();
    const many = Array.from({ length: ATTEMPTS_PER_MESSAGE + 1 }, (_, index) => ({ ...webhook, id: `WHK-${2000 + index}` }));
    const { deliveriesOf } = await repository();
    const made = deliveriesOf(event, many) as DeliveryDocument[];

    await (await deliveries()).queueDue(made);

    expect(messagesFor(made[0]!).map(({ message }) => message.attempts.length)).toEqual([ATTEMPTS_PER_MESSAGE]);
    expect(messagesFor(made.at(-1)!).map(({ message }) => message.attempts.length)).toEqual([1]);
  });

  it('fails when the queue refuses a message, for the relay’s page to be handed over again', async () => {
    const { delivery } = await subscribedTenant();
    front.answer = () => 500;
    await expect((await deliveries()).queueDue([delivery])).rejects.toMatchObject({ name: 'DependencyUnavailableError', dependency: 'queue' });
  });
});

describe('attempt', () => {
  it('sends the event to its subscription, signed with that subscription’s secret, records the delivery Succeeded, and queues nothing', async () => {
    const { tenantId, webhook, event, delivery } = await subscribedTenant();
    const before = Math.floor(Date.now() / 1000);

    await attemptNext(delivery);

    const [request] = requestsFor(event);
    expect(requestsFor(event)).toHaveLength(1);
    expect(signedWith(request!, webhook.secret)).toBe(true);
    expect(JSON.parse(request!.body)).toEqual({ type: 'project.created', timestamp: event.timestamp, data: event.data });
    expect(Number(request!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(before);
    expect(Number(request!.headers['webhook-timestamp'])).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(await deliveryOf(event, webhook)).toMatchObject({
      tenantId,
      status: 'Succeeded',
      attempts: 1,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
    });
    expect(messagesFor(delivery)).toEqual([]);
  });

  it('sends one request when two runs make the same attempt at once', async () => {
    const { tenantId, webhook, event, delivery } = await failedOnce();
    const claims = gate<undefined>();
    let claimsSeen = 0;
    embedded.store.intercept = (record) => {
      if (record.method !== 'PATCH' || !record.path.endsWith(`/docs/${delivery.id}`)) return undefined;
      if (++claimsSeen === 2) claims.release(undefined);
      return claims.released;
    };

    await Promise.all([attemptNext(delivery, 2), attemptNext(delivery, 2)]);

    expect(claimsSeen).toBeGreaterThanOrEqual(2);
    expect(requestsFor(event)).toHaveLength(2);
    expect(await deliveryOf(event, webhook)).toMatchObject({ tenantId, attempts: 2, status: 'Succeeded' });
  });

  it('sends nothing for a delivery that is gone, or for an attempt already made', async () => {
    const { tenantId, event, delivery } = await failedOnce();

    await expect(attemptNext({ tenantId, id: `dlv_${randomUUID()}`, attempts: 0 })).resolves.toBeUndefined();
    await attemptNext(delivery, 1);

    expect(requestsFor(event)).toHaveLength(1);
    expect(messagesFor(delivery)).toHaveLength(1);
  });

  it('makes an attempt whose message came within the early allowance, and not one that came earlier, nor one another run holds', async () => {
    const early = await failedOnce(60_000);
    const almost = await failedOnce(1_000);

    await attemptNext(early.delivery, 2);
    await attemptNext(almost.delivery, 2);

    expect(requestsFor(early.event)).toHaveLength(1);
    expect(await deliveryOf(early.event, early.webhook)).toEqual(early.delivery);
    expect(requestsFor(almost.event)).toHaveLength(2);
    expect(await deliveryOf(almost.event, almost.webhook)).toMatchObject({ status: 'Succeeded', attempts: 2 });
  });

  it('holds an attempt in flight for its longest run and the grace, beyond which the sweep allows its own grace', async () => {
    const { webhook, event, delivery } = await subscribedTenant();
    const { sweep, SWEEP_GRACE_MS } = await deliveries();
    const { ATTEMPT_TIMEOUT_MS } = await import('../../../shared/webhooks/sender.js');

    const { answer, attempting } = await attemptAtReceiver(delivery, event);
    await sweep(Date.now() + ATTEMPT_TIMEOUT_MS + SWEEP_GRACE_MS + SWEEP_GRACE_MS / 2);
    answer.release(200);
    await attempting;

    expect((await deliveryOf(event, webhook))!.recoveredAt).toBeUndefined();
  });

  it('ends the delivery Failed without sending when the subscription is switched off or deleted, or the event is no longer kept', async () => {
    const off = await failedOnce();
    const deleted = await failedOnce();
    const expired = await failedOnce();
    await change(off.webhook, { active: false });
    await (await tenantData()).item(deleted.webhook.id, deleted.tenantId).delete();
    await (await tenantData()).item(expired.event.id, expired.tenantId).delete();

    for (const { delivery } of [off, deleted, expired]) await attemptNext(delivery, 2);

    for (const { event } of [off, deleted, expired]) expect(requestsFor(event)).toHaveLength(1);
    const ended = { status: 'Failed', attempts: 2, lastStatusCode: null, nextAttemptAt: null };
    expect(await deliveryOf(off.event, off.webhook)).toMatchObject({ ...ended, lastError: 'The subscription is switched off or deleted.' });
    expect(await deliveryOf(deleted.event, deleted.webhook)).toMatchObject({ ...ended, lastError: 'The subscription is switched off or deleted.' });
    expect(await deliveryOf(expired.event, expired.webhook)).toMatchObject({ ...ended, lastError: 'The event is no longer kept.' });
    for (const { delivery } of [off, deleted, expired]) expect(messagesFor(delivery)).toHaveLength(1);
  });
});

describe('a failed attempt', () => {
  it('is recorded, and the next attempt queued with the schedule’s delay, until the last ends the delivery Failed', async () => {
    const { tenantId, webhook, event, delivery } = await failedOnce();

    expect(delivery).toMatchObject({ status: 'Pending', attempts: 1, lastStatusCode: 500, lastError: 'The receiver answered 500.' });
    expect(messagesFor(delivery)).toEqual([{ message: { attempts: [{ tenantId, deliveryId: delivery.id, attempt: 2 }] }, delaySeconds: FIRST_RETRY_S }]);
    expect((await readWebhookDocument(webhook))!.failedInARow).toBe(0);

    answers.push(503);
    await attemptNext(delivery, 2);
    const second = (await deliveryOf(event, webhook))!;
    expect(second).toMatchObject({ status: 'Pending', attempts: 2, lastStatusCode: 503, lastError: 'The receiver answered 503.' });
    expect(secondsFromNow(second.nextAttemptAt)).toBeGreaterThan(SECOND_RETRY_S - 10);
    expect(secondsFromNow(second.nextAttemptAt)).toBeLessThanOrEqual(SECOND_RETRY_S);
    expect(messagesFor(delivery)[1]).toEqual({ message: { attempts: [{ tenantId, deliveryId: delivery.id, attempt: 3 }] }, delaySeconds: SECOND_RETRY_S });

    await change(second, { nextAttemptAt: new Date().toISOString() });
    answers.push(500);
    await attemptNext(delivery, 3);
    expect(await deliveryOf(event, webhook)).toMatchObject({ status: 'Failed', attempts: 3, lastStatusCode: 500, nextAttemptAt: null });
    expect(messagesFor(delivery)).toHaveLength(2);
    expect((await readWebhookDocument(webhook))!.failedInARow).toBe(1);
    expect(requestsFor(event)).toHaveLength(3);
  });

  it('records the sender’s error when the receiver cannot be reached', async () => {
    const principal = adminCaller();
    const closed = await startSmallServer((_request, response) => response.end());
    const url = `${closed.url}/hook`;
    await closed.close();
    const webhook = await subscription(principal, url);
    const event = await storedEvent(principal.tenantId);

    await attemptNext(await madeDelivery(event, webhook));

    const delivery = (await deliveryOf(event, webhook))!;
    expect(delivery).toMatchObject({ status: 'Pending', attempts: 1, lastStatusCode: null });
    expect(delivery.lastError).toEqual(expect.any(String));
    expect(delivery.lastError).not.toMatch(/answered/);
    expect(messagesFor(delivery)).toHaveLength(1);
  });

  it('clears the subscription’s count of failures once a delivery succeeds', async () => {
    const principal = adminCaller();
    const webhook = await change(await subscription(principal), { failedInARow: 2 });
    await attemptNext(await madeDelivery(await storedEvent(principal.tenantId), webhook));
    expect((await readWebhookDocument(webhook))!.failedInARow).toBe(0);
  });

  it('leaves the delivery to the sweep when the queue refuses the next attempt, which the sweep brings back once', async () => {
    await endPendingDeliveries();
    const { webhook, event, delivery: made } = await subscribedTenant();
    answers.push(500);
    front.answer = () => 500;
    const { sweep, SWEEP_GRACE_MS } = await deliveries();

    await attemptNext(made);

    const delivery = (await deliveryOf(event, webhook))!;
    expect(delivery).toMatchObject({ status: 'Pending', attempts: 1, lastStatusCode: 500 });
    expect(messagesFor(delivery)).toEqual([]);
    // Its retry's time comes and goes past the grace, with no message to carry it.
    await change(delivery, { nextAttemptAt: new Date(Date.now() - SWEEP_GRACE_MS - 1_000).toISOString() });
    expect(await sweep()).toBe(1);
    expect((await deliveryOf(event, webhook))!.recoveredAt).toEqual(expect.any(String));
    expect(await sweep()).toBe(0);
  });

  it('queues nothing when another writer changed the delivery while it was attempted: that writer carries on', async () => {
    const { webhook, event, delivery } = await subscribedTenant();
    const { answer, attempting } = await attemptAtReceiver(delivery, event);
    const retried = await change((await deliveryOf(event, webhook))!, { nextAttemptAt: new Date().toISOString() });
    answer.release(500);
    await attempting;

    expect(await deliveryOf(event, webhook)).toEqual(retried);
    expect(messagesFor(retried)).toEqual([]);
    expect((await readWebhookDocument(webhook))!.failedInARow).toBe(0);
  });
});

describe('a tenant’s turns', () => {
  /** A tenant whose receiver holds every attempt the tenant may have under way, and one more delivery of its, not attempted. */
  async function tenantHoldingAllTurns() {
    const { QUICK_ATTEMPTS_PER_TENANT } = await import('../../../shared/webhooks/tenant-turns.js');
    const hanging = await subscribedTenant();
    const events = await Promise.all(Array.from({ length: QUICK_ATTEMPTS_PER_TENANT }, () => storedEvent(hanging.tenantId)));
    const [over, ...others] = await Promise.all(events.map((event) => madeDelivery(event, hanging.webhook)));
    const holding = [hanging.delivery, ...others];
    const answer = gate<number>();
    answers.push(...holding.map(() => answer.released));
    const attempting = Promise.all(holding.map((delivery) => attemptNext(delivery)));
    const held = (request: ReceivedDelivery) => holding.some((delivery) => request.headers['webhook-id'] === delivery.eventId);
    await waitFor(() => receiver.received.filter(held).length === holding.length);
    return { ...hanging, over: over!, overEvent: events[0]!, answer, attempting };
  }

  it('are all a tenant’s hanging receivers hold: its attempts beyond them wait on the queue, longer each time, while another tenant’s are made', async () => {
    const { tenantId, webhook, over, overEvent, answer, attempting } = await tenantHoldingAllTurns();

    // One more of that tenant's: back on the queue, for 1 s, touching nothing in the store.
    const fromStore = embedded.store.requests.length;
    await attemptNext(over);
    const [waited] = messagesFor(over);
    const overAttempt = { tenantId, deliveryId: over.id, attempt: 1 };
    expect(waited).toEqual({ message: { attempts: [overAttempt], waited: 1 }, delaySeconds: 1 });
    expect(embedded.store.requests.slice(fromStore)).toEqual([]);
    expect(await deliveryOf(overEvent, webhook)).toEqual(over);

    // Back in a message with another tenant's attempt: that one is made at once, and this one goes back alone, for 2 s.
    const other = await subscribedTenant();
    const otherAttempt = { tenantId: other.tenantId, deliveryId: other.delivery.id, attempt: 1 };
    await (await deliveries()).attempt({ attempts: [overAttempt, otherAttempt], waited: 1 });
    expect(await deliveryOf(other.event, other.webhook)).toMatchObject({ status: 'Succeeded', attempts: 1 });
    expect(messagesFor(over)[1]).toEqual({ message: { attempts: [overAttempt], waited: 2 }, delaySeconds: 2 });
    expect(await deliveryOf(overEvent, webhook)).toEqual(over);

    // A turn given back is taken by the next of the tenant's messages.
    answer.release(200);
    await attempting;
    await (await deliveries()).attempt(messagesFor(over)[1]!.message);
    expect(await deliveryOf(overEvent, webhook)).toMatchObject({ status: 'Succeeded', attempts: 1 });
  });

  it('leave the message to the host when the queue cannot take it back: the attempt fails, and nothing is lost', async () => {
    const { webhook, over, overEvent, answer, attempting } = await tenantHoldingAllTurns();

    front.answer = () => 503;
    await expect(attemptNext(over)).rejects.toMatchObject({ name: 'DependencyUnavailableError', dependency: 'queue' });
    expect(await deliveryOf(overEvent, webhook)).toEqual(over);
    answer.release(200);
    await attempting;
  });
});

describe('sweep', () => {
  it('brings back, once, only the Pending deliveries overdue past the grace, and counts only those it wrote', async () => {
    const principal = adminCaller();
    await endPendingDeliveries();
    const webhook = await subscription(principal);
    const { sweep, SWEEP_GRACE_MS } = await deliveries();
    const overdue = await madeDelivery(await storedEvent(principal.tenantId), webhook, -SWEEP_GRACE_MS - 5_000);
    const lately = await madeDelivery(await storedEvent(principal.tenantId), webhook, -SWEEP_GRACE_MS + 5_000);
    const ended = await change(await madeDelivery(await storedEvent(principal.tenantId), webhook, -SWEEP_GRACE_MS - 5_000), { status: 'Succeeded' });
    const taken = await madeDelivery(await storedEvent(principal.tenantId), webhook, -SWEEP_GRACE_MS - 5_000);
    // Another run takes `taken` between the sweep's query and its write: the sweep leaves it alone.
    embedded.store.intercept = async (record) => {
      if (record.method !== 'PATCH' || !record.path.endsWith(`/docs/${taken.id}`)) return undefined;
      embedded.store.intercept = undefined;
      await change(taken, { nextAttemptAt: new Date(Date.now() + 60_000).toISOString() });
      return undefined;
    };

    expect(await sweep()).toBe(1);
    expect(await sweep()).toBe(0);

    const recovered = async (delivery: DeliveryDocument) => (await repository()).readDelivery(principal.tenantId, delivery.id);
    expect((await recovered(overdue))!.recoveredAt).toEqual(expect.any(String));
    for (const left of [lately, ended, taken]) expect((await recovered(left))!.recoveredAt).toBeUndefined();
    expect(await sweep(Date.now() + 10_000)).toBe(1);
    expect((await recovered(lately))!.recoveredAt).toEqual(expect.any(String));
  });

  it('brings back no more than its limit in a run, and the rest in the runs after', async () => {
    await endPendingDeliveries();
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const { sweep, SWEEP_GRACE_MS } = await deliveries();
    for (let index = 0; index < 3; index++) await madeDelivery(await storedEvent(principal.tenantId), webhook, -SWEEP_GRACE_MS - 5_000);

    expect(await sweep(Date.now(), 2)).toBe(2);
    expect(await sweep(Date.now(), 2)).toBe(1);
    expect(await sweep(Date.now(), 2)).toBe(0);
  });

  it('takes a delivery that looks overdue while the queue has messages waiting for one of them, and brings it back only ten minutes overdue', async () => {
    await endPendingDeliveries();
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const { sweep, queueDue, SWEEP_GRACE_MS, SWEEP_AGAIN_MS } = await deliveries();
    const waiting = await madeDelivery(await storedEvent(principal.tenantId), webhook, -SWEEP_GRACE_MS - 5_000);
    const long = await madeDelivery(await storedEvent(principal.tenantId), webhook, -SWEEP_AGAIN_MS - 5_000);
    // A burst's messages, waiting to be handled.
    await queueDue([await madeDelivery(await storedEvent(principal.tenantId), webhook, 60_000)]);

    expect(await sweep()).toBe(1);
    const recovered = async (delivery: DeliveryDocument) => (await (await repository()).readDelivery(principal.tenantId, delivery.id))!.recoveredAt;
    expect(await recovered(long)).toEqual(expect.any(String));
    expect(await recovered(waiting)).toBeUndefined();

    // Its message handled, the queue has nothing waiting: the one that looked overdue was not among them, and is brought back.
    await emptyQueue();
    expect(await sweep()).toBe(1);
    expect(await recovered(waiting)).toEqual(expect.any(String));
  });

  it('brings a delivery back again once it has stayed overdue for a while after: the message its bringing back queued may be lost too', async () => {
    await endPendingDeliveries();
    const { webhook, event } = await subscribedTenant();
    const { sweep, SWEEP_GRACE_MS, SWEEP_AGAIN_MS } = await deliveries();
    await change((await deliveryOf(event, webhook))!, { nextAttemptAt: new Date(Date.now() - SWEEP_GRACE_MS - 1_000).toISOString() });

    expect(await sweep()).toBe(1);
    const brought = (await deliveryOf(event, webhook))!.recoveredAt;
    expect(await sweep(Date.now() + SWEEP_AGAIN_MS / 2)).toBe(0);
    expect(await sweep(Date.now() + SWEEP_AGAIN_MS + 1_000)).toBe(1);
    expect((await deliveryOf(event, webhook))!.recoveredAt).not.toBe(brought);
  });
});
