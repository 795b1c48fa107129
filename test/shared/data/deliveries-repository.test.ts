/**
 * Webhook deliveries' store (shared/data/deliveries-repository.ts), in process, against the embedded
 * Cosmos store of the local stack started by this file: which subscriptions an event goes to, the
 * deliveries made of it (once, also when two makers race), a ping, the claims and records of
 * attempts under the delivery's etag (one claim when two runs race), the list, a retry, and the
 * overdue deliveries a sweep brings back. The app reaches the store through a proxy
 * (test/support/cosmos-proxy.ts) that can fail a request or hold it while another writer gets there
 * first; the test reads and writes the store directly, as another instance would.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../../shared/auth/principal.js';
import {
  bringBack,
  claimAttempt,
  deliveriesOf,
  deliveryIdOf,
  deliveryResource,
  listDeliveries,
  makeDeliveries,
  overdueDeliveries,
  ping,
  readDelivery,
  recordAttempt,
  retryDelivery,
  type DeliveryDocument,
} from '../../../shared/data/deliveries-repository.js';
import { EVENT_RETENTION_SECONDS, eventDocument, type EventDocument } from '../../../shared/data/events.js';
import { createWebhook, getWebhook, readWebhook, updateWebhook, type WebhookDocument } from '../../../shared/data/webhooks-repository.js';
import type { EventType } from '../../../shared/schemas/events.js';
import { newSecret } from '../../../shared/webhooks/signing.js';
import { errorOf, failureOf } from '../../support/failures.js';
import { beforeRequest, type CosmosRequestRecord, isBatch, STORE_FAILURE, writesIn } from '../../support/cosmos-proxy.js';
import { documentsOf, embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';

const embedded = embeddedStoreForTests();

const LEASE_MS = 60_000;

async function stored<T = DeliveryDocument>(tenantId: string, id: string): Promise<T | undefined> {
  const { resource } = await embedded.direct().item(id, tenantId).read<T & object>();
  return resource;
}

const deliveriesStored = (tenantId: string) => documentsOf<DeliveryDocument>(embedded.direct(), tenantId, 'delivery');
const eventsStored = (tenantId: string) => documentsOf<EventDocument>(embedded.direct(), tenantId, 'event');

/** Sets fields of a stored document as another instance (or time passing) would, past the proxy. */
async function storeFields<D extends { id: string; tenantId: string }>(document: D, fields: Partial<D>): Promise<D> {
  const current = (await stored<D>(document.tenantId, document.id))!;
  const { resource } = await embedded
    .direct()
    .item(document.id, document.tenantId)
    .replace({ ...current, ...fields });
  return resource as unknown as D;
}

/** A stored subscription of the caller's tenant to these events. */
async function subscription(principal: Principal, events: EventType[] = ['project.created']): Promise<WebhookDocument> {
  const { resource } = await createWebhook(principal.tenantId, principal.objectId, { url: 'https://receiver.example/hook' }, newSecret(), events, undefined);
  return (await readWebhook(principal.tenantId, resource.id))!;
}

/** A subscription as the relay reads it, not stored: what `deliveriesOf` looks at. */
function subscriptionOf(fields: Partial<WebhookDocument> = {}): WebhookDocument {
  return {
    ...{ id: `WHK-${Math.floor(Math.random() * 1e9)}`, tenantId: randomUUID(), type: 'webhook', url: 'https://receiver.example/hook' },
    ...{ events: ['project.created'], description: '', active: true, disabledReason: null, createdAt: '2026-11-01T00:00:00.000Z' },
    ...{ updatedAt: '2026-11-01T00:00:00.000Z', secret: newSecret(), retiredSecrets: [], slot: 1, failedInARow: 0, _etag: '' },
    ...fields,
  };
}

/** An event of the tenant as a change writes it, stored unless told otherwise. */
async function storedEvent(tenantId: string, type: EventType = 'project.created'): Promise<EventDocument> {
  const { resource } = await embedded.direct().items.create(eventDocument(tenantId, { type, data: { id: `PRJ-${randomUUID()}` } }));
  return resource as unknown as EventDocument;
}

/** The one delivery of a new event to the subscription, made as the relay makes it. */
async function delivered(webhook: WebhookDocument): Promise<DeliveryDocument> {
  const event = await storedEvent(webhook.tenantId);
  const [document] = deliveriesOf(event, [webhook]);
  await makeDeliveries(webhook.tenantId, [document!]);
  return (await stored(webhook.tenantId, document!.id))!;
}

/** The create, batch or not, that writes one of the tenant's deliveries. */
const isDeliveryWrite = (tenantId: string) => (record: CosmosRequestRecord) =>
  record.method === 'POST' && !record.isQuery && record.body.includes(tenantId) && record.body.includes('"type":"delivery"');

/** The patch of one delivery. */
const isPatchOf = (id: string) => (record: CosmosRequestRecord) => record.method === 'PATCH' && record.path.endsWith(`/docs/${id}`);

/** The document as written again with these fields: a new etag and time stamp, nothing else changed. */
const rewritten = <D extends object>(document: D, fields: Partial<D> & Record<string, unknown>) => ({
  ...document,
  ...fields,
  _etag: expect.not.stringMatching(`^${(document as { _etag?: string })._etag}$`),
  _ts: expect.any(Number),
});

const within = (iso: string | null, from: number, to: number) => {
  const at = Date.parse(iso!);
  return at >= from && at <= to;
};

describe('deliveriesOf', () => {
  it('makes one delivery per subscription that receives the event: Pending, not attempted, due at once, kept as long as events', () => {
    const tenantId = randomUUID();
    const event = { ...eventDocument(tenantId, { type: 'task.created', data: { id: 'TSK-1' } }), _etag: '' };
    const first = subscriptionOf({ events: ['task.created'] });
    const second = subscriptionOf({ events: ['task.created', 'task.updated'] });
    const before = Date.now();
    const toMake = deliveriesOf(event, [first, subscriptionOf({ active: false, events: ['task.created'] }), subscriptionOf(), second]);
    const after = Date.now();

    expect(toMake.map(({ webhookId }) => webhookId)).toEqual([first.id, second.id]);
    const [document] = toMake;
    expect(document).toEqual({
      id: `dlv_${event.id}_${first.id}`,
      tenantId,
      type: 'delivery',
      webhookId: first.id,
      eventId: event.id,
      eventType: 'task.created',
      status: 'Pending',
      attempts: 0,
      lastStatusCode: null,
      lastError: null,
      nextAttemptAt: document!.createdAt,
      createdAt: document!.createdAt,
      updatedAt: document!.createdAt,
      ttl: 7 * 24 * 60 * 60,
    });
    expect(EVENT_RETENTION_SECONDS).toBe(604_800);
    expect(within(document!.createdAt, before, after)).toBe(true);
    expect(toMake[1]!.id).toBe(deliveryIdOf(event.id, second.id));
    expect(deliveriesOf(event, [subscriptionOf({ events: ['task.deleted'] })])).toEqual([]);
  });
});

describe('makeDeliveries', () => {
  it('makes the deliveries of a tenant in one transactional batch, in its partition', async () => {
    const tenantId = randomUUID();
    const event = await storedEvent(tenantId);
    const toMake = deliveriesOf(event, [subscriptionOf({ tenantId }), subscriptionOf({ tenantId })]);
    const from = embedded.store.requests.length;
    await makeDeliveries(tenantId, toMake);

    const writes = writesIn(embedded.store.requests.slice(from));
    expect(writes).toHaveLength(1);
    expect(isBatch(writes[0]!)).toBe(true);
    expect(writes[0]!.partitionKey).toBe(JSON.stringify([tenantId]));
    const kept = await deliveriesStored(tenantId);
    expect(kept.map(({ id }) => id).sort()).toEqual(toMake.map(({ id }) => id).sort());
    for (const document of toMake) expect(await stored(tenantId, document.id)).toMatchObject(document);
  });

  it('sends nothing to the store when there is nothing to make', async () => {
    const from = embedded.store.requests.length;
    await makeDeliveries(randomUUID(), []);
    expect(embedded.store.requests.slice(from)).toEqual([]);
  });

  it('makes the deliveries of an event handed over twice once, and leaves them as the first made them', async () => {
    const tenantId = randomUUID();
    const event = await storedEvent(tenantId);
    const subscriptions = [subscriptionOf({ tenantId }), subscriptionOf({ tenantId })];
    await makeDeliveries(tenantId, deliveriesOf(event, subscriptions));
    const first = await deliveriesStored(tenantId);
    await makeDeliveries(tenantId, deliveriesOf(event, subscriptions));
    expect(await deliveriesStored(tenantId)).toEqual(first);
    expect(first).toHaveLength(2);
  });

  it('makes, each on its own, those not made yet when another maker got some first, and leaves that one as it was made', async () => {
    const tenantId = randomUUID();
    const event = await storedEvent(tenantId);
    const subscriptions = [subscriptionOf({ tenantId }), subscriptionOf({ tenantId }), subscriptionOf({ tenantId })];
    const mine = deliveriesOf(event, subscriptions);
    const theirs = deliveriesOf(event, [subscriptions[1]!]);
    // Another instance makes the second delivery while this one's batch is on its way.
    let made: DeliveryDocument | undefined;
    beforeRequest(embedded.store, isBatch, async () => {
      made = (await embedded.direct().items.create({ ...theirs[0]!, attempts: 1 })).resource;
    });
    await makeDeliveries(tenantId, mine);

    expect(await stored(tenantId, mine[1]!.id)).toEqual(made);
    for (const document of [mine[0]!, mine[2]!]) expect(await stored(tenantId, document.id)).toMatchObject({ ...document, attempts: 0 });
    expect(await deliveriesStored(tenantId)).toHaveLength(3);
  });

  it('makes up to 100 deliveries in one batch, and more in batches of 100', async () => {
    const tenantId = randomUUID();
    const event = await storedEvent(tenantId);
    const many = (count: number) => Array.from({ length: count }, () => subscriptionOf({ tenantId }));

    let from = embedded.store.requests.length;
    await makeDeliveries(tenantId, deliveriesOf(event, many(100)));
    expect(writesIn(embedded.store.requests.slice(from)).map(isBatch)).toEqual([true]);

    from = embedded.store.requests.length;
    await makeDeliveries(tenantId, deliveriesOf(event, many(201)));
    expect(writesIn(embedded.store.requests.slice(from)).map(isBatch)).toEqual([true, true, true]);
    expect(await deliveriesStored(tenantId)).toHaveLength(301);
  });

  it('fails, making nothing more, when the batch fails for another reason than a delivery made already', async () => {
    const tenantId = randomUUID();
    const event = await storedEvent(tenantId);
    embedded.store.intercept = (record) => (isBatch(record) ? { status: 200, body: [{ statusCode: 424 }, { statusCode: 429 }] } : undefined);
    const from = embedded.store.requests.length;
    const error = await errorOf(makeDeliveries(tenantId, deliveriesOf(event, [subscriptionOf({ tenantId }), subscriptionOf({ tenantId })])));
    expect(error.code).toBe(429);
    expect(error.message).toContain(tenantId);
    expect(writesIn(embedded.store.requests.slice(from))).toHaveLength(1);
    expect(await deliveriesStored(tenantId)).toEqual([]);
  });

  it('fails when a delivery made on its own, after the batch found one made already, fails for another reason', async () => {
    const tenantId = randomUUID();
    const event = await storedEvent(tenantId);
    embedded.store.intercept = (record) => {
      if (isBatch(record)) return { status: 200, body: [{ statusCode: 409 }, { statusCode: 424 }] };
      return isDeliveryWrite(tenantId)(record) ? STORE_FAILURE : undefined;
    };
    expect((await errorOf(makeDeliveries(tenantId, deliveriesOf(event, [subscriptionOf({ tenantId }), subscriptionOf({ tenantId })])))).code).toBe(500);
  });
});

describe('ping', () => {
  it('stores the ping event, for the subscription pinged only, and its one delivery due at once, in one batch of the tenant', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const before = Date.now();
    const from = embedded.store.requests.length;
    const delivery = await ping(principal.tenantId, webhook.id);
    const after = Date.now();

    const writes = writesIn(embedded.store.requests.slice(from));
    expect(writes).toHaveLength(1);
    expect(isBatch(writes[0]!)).toBe(true);
    expect(writes[0]!.partitionKey).toBe(JSON.stringify([principal.tenantId]));
    const [event] = await eventsStored(principal.tenantId);
    expect(event).toMatchObject({
      eventType: 'webhook.ping',
      webhookId: webhook.id,
      data: await getWebhook(principal.tenantId, webhook.id),
      ttl: EVENT_RETENTION_SECONDS,
    });
    expect(JSON.stringify(event!.data)).not.toContain(webhook.secret);
    expect(delivery).toEqual(await stored(principal.tenantId, deliveryIdOf(event!.id, webhook.id)));
    expect(delivery).toMatchObject({ eventId: event!.id, eventType: 'webhook.ping', webhookId: webhook.id, status: 'Pending', attempts: 0 });
    expect(within(delivery.nextAttemptAt, before, after)).toBe(true);
  });

  it('is a 409 for a subscription switched off and a 404 for one not of the tenant, storing nothing', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    await storeFields(webhook, { active: false });
    expect(await failureOf(ping(principal.tenantId, webhook.id))).toMatchObject({
      refusal: 'conflict',
      messageKey: 'webhookInactive',
      params: { id: webhook.id },
    });
    expect(await failureOf(ping(adminCaller().tenantId, webhook.id))).toMatchObject({ refusal: 'notFound', messageKey: 'webhookNotFound' });
    expect(await eventsStored(principal.tenantId)).toEqual([]);
    expect(await deliveriesStored(principal.tenantId)).toEqual([]);
  });

  it('fails when its batch fails', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    embedded.store.intercept = (record) => (isBatch(record) ? { status: 200, body: [{ statusCode: 429 }, { statusCode: 424 }] } : undefined);
    expect((await errorOf(ping(principal.tenantId, webhook.id))).code).toBe(429);
    embedded.store.intercept = (record) => (isBatch(record) ? { status: 200, body: [{ statusCode: 201 }] } : undefined);
    expect(await errorOf(ping(principal.tenantId, webhook.id))).toMatchObject({ message: expect.stringContaining('Storing a ping') });
  });
});

describe('readDelivery and deliveryResource', () => {
  it('reads the tenant’s delivery, none of another tenant or under another type, and shows exactly the delivery’s fields', async () => {
    const principal = adminCaller();
    const delivery = await delivered(await subscription(principal));
    expect(await readDelivery(principal.tenantId, delivery.id)).toEqual(delivery);
    expect(await readDelivery(randomUUID(), delivery.id)).toBeUndefined();
    const tenantId = randomUUID();
    await embedded.direct().items.create({ id: delivery.id, tenantId, type: 'event' });
    expect(await readDelivery(tenantId, delivery.id)).toBeUndefined();

    const resource = deliveryResource(delivery);
    expect(resource).toEqual({
      id: delivery.id,
      eventId: delivery.eventId,
      type: 'project.created',
      status: 'Pending',
      attempts: 0,
      lastStatusCode: null,
      lastError: null,
      nextAttemptAt: delivery.nextAttemptAt,
      createdAt: delivery.createdAt,
    });
    expect(Object.keys(resource)).toEqual(['id', 'eventId', 'type', 'status', 'attempts', 'lastStatusCode', 'lastError', 'nextAttemptAt', 'createdAt']);
  });
});

describe('listDeliveries', () => {
  it('lists the subscription’s deliveries newest first, a page at a time, none of another subscription or tenant', async () => {
    const principal = adminCaller();
    const other = adminCaller();
    const webhook = await subscription(principal);
    const sibling = await subscription(principal);
    // The other tenant's first subscription has the same id.
    const namesake = await subscription(other);
    expect(namesake.id).toBe(webhook.id);
    const made: DeliveryDocument[] = [];
    for (let day = 1; day <= 3; day++) {
      made.push(await storeFields(await delivered(webhook), { createdAt: `2026-11-0${day}T00:00:00.000Z` }));
      await storeFields(await delivered(sibling), { createdAt: `2026-11-0${day}T12:00:00.000Z` });
      await storeFields(await delivered(namesake), { createdAt: `2026-11-0${day}T12:00:00.000Z` });
    }
    const [oldest, middle, newest] = made.map(deliveryResource);

    const first = await listDeliveries(principal.tenantId, webhook.id, { limit: 2, cursor: undefined });
    expect(first.items).toEqual([newest, middle]);
    expect(first.nextCursor).toBeDefined();
    expect(await listDeliveries(principal.tenantId, webhook.id, { limit: 2, cursor: first.nextCursor })).toEqual({ items: [oldest], nextCursor: undefined });
    // Azure runs a query in the partition it names: the caller's.
    const queries = embedded.store.requests.filter((request) => request.isQuery && request.body.includes('c.webhookId = @webhookId'));
    expect(queries.length).toBeGreaterThanOrEqual(2);
    for (const sent of queries.slice(-2)) expect(sent.partitionKey).toBe(JSON.stringify([principal.tenantId]));
    expect((await listDeliveries(principal.tenantId, sibling.id, { limit: 10, cursor: undefined })).items).toHaveLength(3);
    expect(await listDeliveries(adminCaller().tenantId, webhook.id, { limit: 10, cursor: undefined })).toEqual({ items: [], nextCursor: undefined });
  });

  it('refuses a cursor of another subscription’s list', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const sibling = await subscription(principal);
    for (let n = 0; n < 2; n++) await delivered(webhook);
    const { nextCursor } = await listDeliveries(principal.tenantId, webhook.id, { limit: 1, cursor: undefined });
    expect(await failureOf(listDeliveries(principal.tenantId, sibling.id, { limit: 1, cursor: nextCursor }))).toMatchObject({
      refusal: 'invalid',
      messageKey: 'cursorForOtherQuery',
    });
  });
});

describe('claimAttempt', () => {
  /** Claims the delivery's next attempt, due by now, held for the lease. */
  const claimNext = (delivery: DeliveryDocument, leaseMs = LEASE_MS) =>
    claimAttempt(delivery.tenantId, delivery.id, delivery.attempts + 1, new Date(), leaseMs);

  it('takes the attempt in one write, moving the delivery’s due time past the lease and changing nothing else', async () => {
    const principal = adminCaller();
    const delivery = await delivered(await subscription(principal));
    const before = Date.now();
    const from = embedded.store.requests.length;
    const claimed = await claimNext(delivery);
    const after = Date.now();
    expect(embedded.store.requests.slice(from).map(({ method }) => method)).toEqual(['PATCH']);
    expect(claimed).toEqual(rewritten(delivery, { nextAttemptAt: claimed!.nextAttemptAt }));
    expect(within(claimed!.nextAttemptAt, before + LEASE_MS, after + LEASE_MS)).toBe(true);
    expect(await stored(principal.tenantId, delivery.id)).toEqual(claimed);
  });

  it('gives the attempt to one run only when two claim it at once', async () => {
    const principal = adminCaller();
    const delivery = await delivered(await subscription(principal));
    // Another run's claim reaches the store while this one's is on its way.
    let theirs: DeliveryDocument | undefined;
    beforeRequest(embedded.store, isPatchOf(delivery.id), async () => {
      theirs = await claimNext(delivery, 2 * LEASE_MS);
    });
    expect(await claimNext(delivery)).toBeUndefined();
    expect(theirs).toBeDefined();
    expect(await stored(principal.tenantId, delivery.id)).toEqual(theirs);
  });

  it('gives nothing for an attempt made already, a delivery ended, one not due by the time given, or one gone, and changes nothing', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const made = await storeFields(await delivered(webhook), { attempts: 1 });
    const ended = await storeFields(await delivered(webhook), { status: 'Succeeded' });
    const later = await delivered(webhook);
    for (const delivery of [made, ended]) expect(await claimAttempt(principal.tenantId, delivery.id, 1, new Date(), LEASE_MS)).toBeUndefined();
    expect(await claimAttempt(principal.tenantId, later.id, 1, new Date(Date.parse(later.nextAttemptAt!) - 1), LEASE_MS)).toBeUndefined();
    for (const delivery of [made, ended, later]) expect(await stored(principal.tenantId, delivery.id)).toEqual(delivery);
    expect(await claimAttempt(principal.tenantId, `dlv_${randomUUID()}`, 1, new Date(), LEASE_MS)).toBeUndefined();
  });

  it('fails when the store fails', async () => {
    const principal = adminCaller();
    const delivery = await delivered(await subscription(principal));
    embedded.store.intercept = (record) => (record.method === 'PATCH' ? STORE_FAILURE : undefined);
    expect((await errorOf(claimNext(delivery))).code).toBe(500);
  });
});

describe('recordAttempt', () => {
  it('records the attempt’s number, outcome, the status and due time after it, on the delivery as claimed', async () => {
    const principal = adminCaller();
    const delivery = await delivered(await subscription(principal));
    const claimed = (await claimAttempt(delivery.tenantId, delivery.id, 1, new Date(), LEASE_MS))!;
    const before = Date.now();
    const next = new Date(Date.now() + 30_000).toISOString();
    const recorded = await recordAttempt(
      claimed,
      1,
      { lastStatusCode: 503, lastError: 'Service Unavailable' },
      { status: 'Pending', nextAttemptAt: next, gone: false },
    );
    expect(recorded).toEqual(
      rewritten(claimed, {
        ...{ attempts: 1, lastStatusCode: 503, lastError: 'Service Unavailable', status: 'Pending' },
        ...{ nextAttemptAt: next, updatedAt: recorded!.updatedAt },
      }),
    );
    expect(Date.parse(recorded!.updatedAt)).toBeGreaterThanOrEqual(before);
    expect(await stored(principal.tenantId, delivery.id)).toEqual(recorded);
  });

  it('records nothing when the delivery changed since it was claimed', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const delivery = await delivered(webhook);
    const claimed = (await claimAttempt(delivery.tenantId, delivery.id, 1, new Date(), LEASE_MS))!;
    const retried = await retryDelivery(principal.tenantId, webhook.id, delivery.id);
    expect(
      await recordAttempt(claimed, 1, { lastStatusCode: 200, lastError: null }, { status: 'Succeeded', nextAttemptAt: null, gone: false }),
    ).toBeUndefined();
    expect(await stored(principal.tenantId, delivery.id)).toEqual(retried);
  });
});

describe('retryDelivery', () => {
  it('makes a delivery of the subscription Pending and due now, keeping its attempts and last outcome', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const failed = await storeFields(await delivered(webhook), {
      ...{ status: 'Failed', attempts: 8, lastStatusCode: 500, lastError: 'Internal Server Error', nextAttemptAt: null },
      updatedAt: '2026-11-01T00:00:00.000Z',
    });
    const before = Date.now();
    const retried = await retryDelivery(principal.tenantId, webhook.id, failed.id);
    const after = Date.now();
    expect(retried).toEqual(rewritten(failed, { status: 'Pending', nextAttemptAt: retried.nextAttemptAt, updatedAt: retried.updatedAt }));
    expect(within(retried.nextAttemptAt, before, after)).toBe(true);
    expect(within(retried.updatedAt, before, after)).toBe(true);
    expect(await stored(principal.tenantId, failed.id)).toEqual(retried);
  });

  it('writes the delivery even when it is Pending and due at this very instant: the write is what the change feed hands to its attempt', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const now = new Date();
    const due = await storeFields(await delivered(webhook), { status: 'Pending', nextAttemptAt: now.toISOString(), updatedAt: now.toISOString() });
    vi.useFakeTimers({ toFake: ['Date'], now });
    try {
      const retried = await retryDelivery(principal.tenantId, webhook.id, due.id);
      expect(retried).toMatchObject({ status: 'Pending', nextAttemptAt: due.nextAttemptAt, updatedAt: due.updatedAt });
      expect(retried._etag).not.toBe(due._etag);
    } finally {
      vi.useRealTimers();
    }
    expect((await stored(principal.tenantId, due.id))!._etag).not.toBe(due._etag);
  });

  it('is a 404 for a delivery that is not the subscription’s, not the tenant’s, or none, and for a subscription not the tenant’s', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const sibling = await subscription(principal);
    const delivery = await delivered(webhook);
    const notFound = (messageKey: string, id: string) => ({ refusal: 'notFound', messageKey, params: { id } });
    expect(await failureOf(retryDelivery(principal.tenantId, sibling.id, delivery.id))).toMatchObject(notFound('deliveryNotFound', delivery.id));
    const none = `dlv_${'x'.repeat(120)}`;
    expect(await failureOf(retryDelivery(principal.tenantId, webhook.id, none))).toMatchObject(notFound('deliveryNotFound', none.slice(0, 100)));
    // Another tenant's subscription of the same id, and its own delivery of the same id.
    const other = adminCaller();
    const namesake = await subscription(other);
    expect(namesake.id).toBe(webhook.id);
    const { _etag, _ts, _rid, _self, _attachments, ...fields } = delivery as DeliveryDocument & Record<string, unknown>;
    await embedded.direct().items.create({ ...fields, tenantId: other.tenantId });
    expect(await failureOf(retryDelivery(principal.tenantId, 'WHK-999999', delivery.id))).toMatchObject(notFound('webhookNotFound', 'WHK-999999'));
    expect(await retryDelivery(other.tenantId, webhook.id, delivery.id)).toMatchObject({ tenantId: other.tenantId, status: 'Pending' });
    expect(await stored(principal.tenantId, delivery.id)).toEqual(delivery);
    const stranger = adminCaller();
    expect(await failureOf(retryDelivery(stranger.tenantId, webhook.id, delivery.id))).toMatchObject(notFound('webhookNotFound', webhook.id));
  });

  it('is a 409 for a subscription switched off, changing nothing', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const delivery = await storeFields(await delivered(webhook), { status: 'Failed', nextAttemptAt: null });
    await updateWebhook(principal.tenantId, webhook.id, { active: false }, undefined);
    expect(await failureOf(retryDelivery(principal.tenantId, webhook.id, delivery.id))).toMatchObject({
      refusal: 'conflict',
      messageKey: 'webhookInactive',
      params: { id: webhook.id },
    });
    expect(await stored(principal.tenantId, delivery.id)).toEqual(delivery);
  });

  it('loses no attempt recorded while it was on its way: it is made again on the delivery as recorded', async () => {
    const principal = adminCaller();
    const webhook = await subscription(principal);
    const delivery = await delivered(webhook);
    // A run records a failed last attempt while the retry's write is on its way.
    beforeRequest(
      embedded.store,
      (record) => isBatch(record) && record.body.includes(delivery.id),
      async () => {
        await storeFields(delivery, { status: 'Failed', attempts: 8, lastStatusCode: 502, nextAttemptAt: null });
      },
    );
    const retried = await retryDelivery(principal.tenantId, webhook.id, delivery.id);
    expect(retried).toMatchObject({ status: 'Pending', attempts: 8, lastStatusCode: 502 });
    expect(await stored(principal.tenantId, delivery.id)).toEqual(retried);
  });
});

describe('overdueDeliveries and bringBack', () => {
  /** Pending deliveries, of a tenant of their own, due on the first of June of that year (the earliest a test here uses is the paging one's). */
  async function dueIn(year: number, count: number, fields: Partial<DeliveryDocument> = {}) {
    const webhook = await subscription(adminCaller());
    const event = await storedEvent(webhook.tenantId);
    const many = Array.from({ length: count }, () => subscriptionOf({ tenantId: webhook.tenantId }));
    const toMake = deliveriesOf(event, many);
    await makeDeliveries(webhook.tenantId, toMake);
    return Promise.all(toMake.map((document) => storeFields(document as DeliveryDocument, { nextAttemptAt: `${year}-06-01T00:00:00.000Z`, ...fields })));
  }

  /** The pages of deliveries overdue before `before`, those brought back since `again` left out unless due since. */
  async function pagesUpTo(before: string, again = '1970-01-01T00:00:00.000Z') {
    const pages: Pick<DeliveryDocument, 'tenantId' | 'id' | '_etag'>[][] = [];
    for await (const page of overdueDeliveries(before, again)) pages.push(page);
    return pages;
  }

  /** The ids of the tenant's deliveries overdue before that time. */
  const overdueOf = async (tenantId: string, before: string, again?: string) =>
    (await pagesUpTo(before, again))
      .flat()
      .filter((delivery) => delivery.tenantId === tenantId)
      .map(({ id }) => id);

  it('finds the Pending deliveries of any tenant due before the time, a hundred at a time, with what bringing them back needs', async () => {
    const overdue = [...(await dueIn(1990, 101)), ...(await dueIn(1990, 2))];
    await dueIn(1990, 1, { status: 'Failed' });
    await dueIn(1990, 1, { status: 'Succeeded' });
    await dueIn(1990, 1, { nextAttemptAt: '1990-12-31T00:00:00.000Z' });

    const pages = await pagesUpTo('1990-12-31T00:00:00.000Z');
    expect(pages.map((page) => page.length)).toEqual([100, 3]);
    const found = pages.flat();
    expect(found.map((delivery) => Object.keys(delivery).sort())).toEqual(found.map(() => ['_etag', 'id', 'tenantId']));
    const key = (delivery: Pick<DeliveryDocument, 'tenantId' | 'id' | '_etag'>) => `${delivery.tenantId}/${delivery.id}/${delivery._etag}`;
    expect(found.map(key).sort()).toEqual(overdue.map(key).sort());
    expect(await pagesUpTo('1990-01-01T00:00:00.000Z')).toEqual([]);
  });

  it('brings an overdue delivery back once: then it is no longer overdue until it falls due again', async () => {
    const [delivery] = await dueIn(2002, 1);
    const before = Date.now();
    expect(await bringBack(delivery!)).toBe(true);
    const brought = (await stored(delivery!.tenantId, delivery!.id))!;
    expect(brought).toEqual(rewritten(delivery!, { recoveredAt: brought.recoveredAt }));
    expect(Date.parse(brought.recoveredAt!)).toBeGreaterThanOrEqual(before);
    // A second sweep that found it before the first brought it back writes nothing.
    expect(await bringBack(delivery!)).toBe(false);
    expect(await stored(delivery!.tenantId, delivery!.id)).toEqual(brought);

    const end = '2002-12-31T00:00:00.000Z';
    expect(await overdueOf(delivery!.tenantId, end)).toEqual([]);
    // Its attempt was claimed and cut off: due again, later than it was brought back.
    await storeFields(brought, { recoveredAt: '2002-06-01T00:00:00.000Z', nextAttemptAt: '2002-06-02T00:00:00.000Z' });
    expect(await overdueOf(delivery!.tenantId, end)).toEqual([delivery!.id]);
    await storeFields(brought, { recoveredAt: '2002-06-02T00:00:00.000Z', nextAttemptAt: '2002-06-02T00:00:00.000Z' });
    expect(await overdueOf(delivery!.tenantId, end)).toEqual([]);
    // Brought back long enough ago, and still overdue: the message its bringing back queued may have been lost too.
    expect(await overdueOf(delivery!.tenantId, end, '2002-06-02T00:00:00.000Z')).toEqual([]);
    expect(await overdueOf(delivery!.tenantId, end, '2002-06-02T00:00:00.001Z')).toEqual([delivery!.id]);
  });

  it('does not bring back a delivery gone, and fails when the store fails', async () => {
    const [delivery] = await dueIn(2003, 1);
    embedded.store.intercept = (record) => (record.method === 'PATCH' ? STORE_FAILURE : undefined);
    expect((await errorOf(bringBack(delivery!))).code).toBe(500);
    embedded.store.intercept = undefined;
    await embedded.direct().item(delivery!.id, delivery!.tenantId).delete();
    expect(await bringBack(delivery!)).toBe(false);
  });
});
