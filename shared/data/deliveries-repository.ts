/**
 * Webhook deliveries, in the tenant's partition. A delivery is one event for one subscription; its
 * id is made of both, so that handing an event over twice delivers it once. Each attempt is claimed
 * and recorded under the delivery's etag, so a message delivered twice attempts once.
 */
import type { OperationInput } from '@azure/cosmos';
import { assertActive, receives, type AfterAttempt } from '../domain/webhooks.js';
import { notFound } from '../domain/errors.js';
import { delivery, type Delivery, type ListDeliveriesQuery } from '../schemas/webhooks.js';
import { settleAll } from '../lib/settle-all.js';
import { MAX_OPERATIONS, sendBatch } from './batches.js';
import { cosmosStatus } from './cosmos.js';
import { EVENT_RETENTION_SECONDS, eventDocument, type EventDocument } from './events.js';
import type { Page } from './paging.js';
import {
  asJson,
  batchFailure,
  changeDocument,
  fieldsOf,
  readDocument,
  readVisible,
  tenantData,
  type DocumentKind,
  type StoredDocument,
} from './tenant-data.js';
import { listPage } from './tenant-queries.js';
import { webhooks, type WebhookDocument } from './webhooks-repository.js';

export interface DeliveryDocument extends Omit<Delivery, 'type'>, StoredDocument {
  type: 'delivery';
  eventType: Delivery['type'];
  webhookId: string;
  updatedAt: string;
  /** When a sweep last brought it back, overdue, through the change feed. */
  recoveredAt?: string;
  ttl: number;
}

const deliveryFields = fieldsOf(delivery);
const deliveries: DocumentKind<DeliveryDocument, Delivery> = {
  type: 'delivery',
  // The document's own `type` says what it is; the delivery's is its event's.
  resourceOf: (document) => deliveryFields({ ...document, type: document.eventType }),
  missing: (id) => notFound('deliveryNotFound', { id: id.slice(0, 100) }),
};

export const deliveryIdOf = (eventId: string, webhookId: string) => `dlv_${eventId}_${webhookId}`;

/** A delivery not yet attempted, due at once. */
function newDelivery(event: Pick<EventDocument, 'id' | 'tenantId' | 'eventType'>, webhookId: string): Omit<DeliveryDocument, '_etag'> {
  const now = new Date().toISOString();
  return {
    id: deliveryIdOf(event.id, webhookId),
    tenantId: event.tenantId,
    type: 'delivery',
    webhookId,
    eventId: event.id,
    eventType: event.eventType,
    status: 'Pending',
    attempts: 0,
    lastStatusCode: null,
    lastError: null,
    nextAttemptAt: now,
    createdAt: now,
    updatedAt: now,
    ttl: EVENT_RETENTION_SECONDS,
  };
}

/** What of an event its deliveries are made from. */
export type EventToDeliver = Pick<EventDocument, 'id' | 'tenantId' | 'eventType' | 'timestamp' | 'webhookId'>;

/** The deliveries of an event, one per subscription it is for, each due at once. */
export function deliveriesOf(event: EventToDeliver, subscriptions: readonly WebhookDocument[]): Omit<DeliveryDocument, '_etag'>[] {
  return subscriptions.filter((subscription) => receives(subscription, event)).map((subscription) => newDelivery(event, subscription.id));
}

/**
 * Makes deliveries of one tenant, in transactional batches of up to 100 where none exists yet (the
 * usual case); else each on its own, one made already being left as it is. A delivery's id is its
 * event's and its subscription's, so making the deliveries of an event twice makes them once.
 */
export async function makeDeliveries(tenantId: string, toMake: readonly Omit<DeliveryDocument, '_etag'>[]): Promise<void> {
  const documents = await tenantData();
  const batches = Array.from({ length: Math.ceil(toMake.length / MAX_OPERATIONS) }, (_, index) =>
    toMake.slice(index * MAX_OPERATIONS, (index + 1) * MAX_OPERATIONS),
  );
  await settleAll(
    batches.map(async (batch) => {
      const result = await sendBatch(
        documents,
        batch.map((document): OperationInput => ({ operationType: 'Create', resourceBody: asJson(document) })),
        tenantId,
      );
      if (result.every((operation) => operation.statusCode === 201)) return;
      if (!result.some((operation) => operation.statusCode === 409)) throw batchFailure(`Making the deliveries of tenant ${tenantId}`, result);
      await settleAll(batch.map((document) => documents.items.create(document).catch(madeAlready)));
    }),
  );
}

/** A create's conflict: the document is there already, as wanted. */
function madeAlready(error: unknown): void {
  if (cosmosStatus(error) !== 409) throw error;
}

/** A ping: its event and its one delivery, due at once, written together; the change feed shows the delivery to the relay, which queues its attempt. */
export async function ping(tenantId: string, id: string): Promise<DeliveryDocument> {
  const subscription = await readVisible(webhooks, tenantId, id);
  assertActive(subscription);
  const event = eventDocument(tenantId, { type: 'webhook.ping', data: webhooks.resourceOf(subscription), webhookId: id });
  const document = newDelivery(event, id);
  const result = await sendBatch(
    await tenantData(),
    [
      { operationType: 'Create', resourceBody: asJson(event) },
      { operationType: 'Create', resourceBody: asJson(document) },
    ],
    tenantId,
  );
  if (result[1]?.statusCode !== 201) throw batchFailure('Storing a ping', result);
  return result[1].resourceBody as unknown as DeliveryDocument;
}

export function readDelivery(tenantId: string, id: string): Promise<DeliveryDocument | undefined> {
  return readDocument<DeliveryDocument>(tenantId, id, deliveries.type);
}

export const deliveryResource = (document: DeliveryDocument): Delivery => deliveries.resourceOf(document);

export function listDeliveries(tenantId: string, webhookId: string, query: ListDeliveriesQuery): Promise<Page<Delivery>> {
  return listPage(deliveries, tenantId, { ...query, webhookId }, { filters: { webhookId: 'c.webhookId = @webhookId' }, orderBy: 'c.createdAt DESC' });
}

/** Replaces a delivery as it was read; undefined when another writer changed it first. */
async function replaceDelivery(current: DeliveryDocument, next: DeliveryDocument): Promise<DeliveryDocument | undefined> {
  try {
    const { resource } = await (
      await tenantData()
    )
      .item(current.id, current.tenantId)
      .replace(asJson(next), { accessCondition: { type: 'IfMatch', condition: current._etag } });
    return resource as unknown as DeliveryDocument;
  } catch (error) {
    if (cosmosStatus(error) === 412 || cosmosStatus(error) === 404) return undefined;
    throw error;
  }
}

/**
 * Takes attempt `attempt` of the delivery for this run, in one conditional write, if it is still to
 * be made: Pending, not made yet, and due by `dueBy`. Its due time moves past the attempt's longest
 * run, so the sweep leaves it alone, and a second run of the same attempt (a message delivered twice)
 * finds it taken. Undefined when it is not to be made (gone, made, ended, not due, or taken by another
 * run first).
 */
export async function claimAttempt(tenantId: string, id: string, attempt: number, dueBy: Date, leaseMs: number): Promise<DeliveryDocument | undefined> {
  // The values are an integer and a timestamp the app makes: nothing a caller writes reaches the condition.
  const due = `c.status = 'Pending' AND c.attempts < ${Math.trunc(attempt)} AND c.nextAttemptAt <= '${dueBy.toISOString()}'`;
  const condition = `FROM c WHERE c.type = 'delivery' AND ${due}`;
  try {
    const { resource } = await (
      await tenantData()
    )
      .item(id, tenantId)
      .patch<DeliveryDocument>({ condition, operations: [{ op: 'set', path: '/nextAttemptAt', value: new Date(Date.now() + leaseMs).toISOString() }] });
    return resource;
  } catch (error) {
    if (cosmosStatus(error) === 412 || cosmosStatus(error) === 404) return undefined;
    throw error;
  }
}

/** Records an attempt's outcome on the delivery as claimed. */
export function recordAttempt(
  claimed: DeliveryDocument,
  attempt: number,
  outcome: { lastStatusCode: number | null; lastError: string | null },
  after: AfterAttempt,
): Promise<DeliveryDocument | undefined> {
  return replaceDelivery(claimed, {
    ...claimed,
    attempts: attempt,
    ...outcome,
    status: after.status,
    nextAttemptAt: after.nextAttemptAt,
    updatedAt: new Date().toISOString(),
  });
}

/** A delivery of this subscription, to be sent again now: Pending, due at once, if the subscription is on (`assertActive`). */
export async function retryDelivery(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDocument> {
  const updated = await changeDocument({
    kind: deliveries,
    tenantId,
    id: deliveryId,
    expected: undefined,
    read: async () => {
      const [subscription, found] = await settleAll([readVisible(webhooks, tenantId, webhookId), readDelivery(tenantId, deliveryId)]);
      if (!found || found.webhookId !== webhookId) throw deliveries.missing(deliveryId);
      assertActive(subscription);
      return found;
    },
    change: (current) => ({ ...current, status: 'Pending' as const, nextAttemptAt: new Date().toISOString(), updatedAt: new Date().toISOString() }),
    // The write is what sends it: the change feed shows the delivery due to the relay.
    touch: true,
  });
  return updated!;
}

/**
 * Pending deliveries of any tenant that were due before `before` and that no sweep brought back since
 * they fell due, nor since `again`: those whose queue message was lost, or whose attempt was cut off
 * by a crash.
 */
export async function* overdueDeliveries(before: string, again: string): AsyncGenerator<Pick<DeliveryDocument, 'tenantId' | 'id' | '_etag'>[]> {
  const query = {
    query:
      "SELECT c.tenantId, c.id, c._etag FROM c WHERE c.type = 'delivery' AND c.status = 'Pending' AND c.nextAttemptAt < @before " +
      'AND (NOT IS_DEFINED(c.recoveredAt) OR c.recoveredAt < c.nextAttemptAt OR c.recoveredAt < @again)',
    parameters: [
      { name: '@before', value: before },
      { name: '@again', value: again },
    ],
  };
  const pages = (await tenantData()).items.query<Pick<DeliveryDocument, 'tenantId' | 'id' | '_etag'>>(query, { maxItemCount: 100 });
  while (pages.hasMoreResults()) {
    const { resources } = await pages.fetchNext();
    if (resources.length) yield resources;
  }
}

/**
 * Brings an overdue delivery back through the change feed, by writing it: the relay sees it due and
 * attempts it. False when it changed since it was found (someone else is on it).
 */
export async function bringBack(delivery: Pick<DeliveryDocument, 'tenantId' | 'id' | '_etag'>): Promise<boolean> {
  try {
    await (
      await tenantData()
    )
      .item(delivery.id, delivery.tenantId)
      .patch(
        { operations: [{ op: 'set', path: '/recoveredAt', value: new Date().toISOString() }] },
        { accessCondition: { type: 'IfMatch', condition: delivery._etag } },
      );
    return true;
  } catch (error) {
    if (cosmosStatus(error) === 412 || cosmosStatus(error) === 404) return false;
    throw error;
  }
}
