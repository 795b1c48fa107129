/**
 * Webhook subscriptions and their deliveries, in the tenant's partition. A subscription holds one of
 * the tenant's 20 slots (a slot document created in the same batch, removed with it), so that
 * racing creates can never make a 21st. A delivery is one event for one subscription; its id is
 * made of both, so that handing an event over twice delivers it once.
 */
import type { OperationInput } from '@azure/cosmos';
import type { Principal } from '../auth/principal.js';
import { MAX_OPERATIONS, sendBatch } from './batches.js';
import { DISABLED_BECAUSE, FAILED_DELIVERIES_TO_DISABLE, type AfterAttempt } from '../domain/webhooks.js';
import type { ExpectedVersion } from '../domain/versions.js';
import { ApiError, conflict, notFound } from '../errors.js';
import {
  delivery,
  MAX_WEBHOOKS_PER_TENANT,
  webhook,
  webhookWithSecret,
  type CreateWebhookBody,
  type Delivery,
  type ListDeliveriesQuery,
  type ListWebhooksQuery,
  type UpdateWebhookBody,
  type Webhook,
  type WebhookWithSecret,
} from '../schemas/webhooks.js';
import { cosmosStatus } from './cosmos.js';
import { EVENT_RETENTION_SECONDS, eventDocument, type EventDocument } from './events.js';
import type { Idempotency } from './idempotency.js';
import type { Page } from './paging.js';
import {
  asJson,
  batchFailure,
  changeDocument,
  createDocument,
  fieldsOf,
  FULL_SCAN_PAGE,
  oneAtATime,
  readDocument,
  readVisible,
  REMOVE,
  tenantData,
  type Created,
  type DocumentKind,
  type StoredDocument,
} from './tenant-data.js';
import { listPage } from './tenant-queries.js';

/** After a rotation the secret it replaced still signs, beside the new one, for a day. */
const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
/** Secrets signing at once, the current one included: bounds the signature header and the document. */
export const MAX_SIGNING_SECRETS = 50;

/** A secret a rotation replaced, and until when it still signs. */
interface RetiredSecret {
  secret: string;
  until: string;
}

export interface WebhookDocument extends Webhook, StoredDocument {
  type: 'webhook';
  secret: string;
  /** Every secret replaced in the last day, newest first: each signs until its `until`. */
  retiredSecrets?: RetiredSecret[];
  /** The one replaced secret that subscriptions rotated before `retiredSecrets` kept. */
  previousSecret?: RetiredSecret | null;
  /** Which of the tenant's slots the subscription holds. */
  slot: number;
  /** Deliveries that ended Failed since the last that succeeded. */
  failedInARow: number;
}

interface SlotDocument extends StoredDocument {
  type: 'webhookSlot';
  webhookId: string;
}

export interface DeliveryDocument extends Omit<Delivery, 'type'>, StoredDocument {
  type: 'delivery';
  eventType: Delivery['type'];
  webhookId: string;
  updatedAt: string;
  /** When a sweep last brought it back, overdue, through the change feed. */
  recoveredAt?: string;
  ttl: number;
}

export const webhooks: DocumentKind<WebhookDocument, Webhook> = {
  type: 'webhook',
  resourceOf: fieldsOf(webhook),
  missing: (id) => notFound('webhookNotFound', { id: id.slice(0, 100) }),
};

/** The subscription with its secret: only a create and a rotation answer with it. */
const withSecret = fieldsOf(webhookWithSecret);

const deliveryFields = fieldsOf(delivery);
const deliveries: DocumentKind<DeliveryDocument, Delivery> = {
  type: 'delivery',
  // The document's own `type` says what it is; the delivery's is its event's.
  resourceOf: (document) => deliveryFields({ ...document, type: document.eventType }),
  missing: (id) => notFound('deliveryNotFound', { id: id.slice(0, 100) }),
};

const slotId = (slot: number) => `webhook-slot-${slot}`;

/** The replaced secrets that still sign, newest first. */
function liveRetiredSecrets(subscription: WebhookDocument, now: number): RetiredSecret[] {
  const retired = [...(subscription.retiredSecrets ?? []), ...(subscription.previousSecret ? [subscription.previousSecret] : [])];
  return retired.filter(({ until }) => Date.parse(until) > now);
}

/** The secrets an attempt signs with: the current one, and every one it replaced within the last day. */
export function signingSecrets(subscription: WebhookDocument, now = Date.now()): string[] {
  return [subscription.secret, ...liveRetiredSecrets(subscription, now).map(({ secret }) => secret)];
}

/** Every subscription of the tenant: at most 20, so one query. */
export async function allWebhooks(tenantId: string): Promise<WebhookDocument[]> {
  const query = {
    query: "SELECT * FROM c WHERE c.tenantId = @tenantId AND c.type = 'webhook'",
    parameters: [{ name: '@tenantId', value: tenantId }],
  };
  const { resources } = await (await tenantData()).items.query<WebhookDocument>(query, { partitionKey: tenantId, maxItemCount: FULL_SCAN_PAGE }).fetchAll();
  return resources;
}

/** One of the tenant's free slots, at random so that racing creates seldom pick the same; or the 409 that says there is none. */
async function freeSlot(tenantId: string): Promise<number> {
  const taken = new Set((await allWebhooks(tenantId)).map((subscription) => subscription.slot));
  const free = Array.from({ length: MAX_WEBHOOKS_PER_TENANT }, (_, index) => index + 1).filter((slot) => !taken.has(slot));
  if (free.length === 0) throw conflict('tooManyWebhooks', { limit: MAX_WEBHOOKS_PER_TENANT });
  return free[Math.floor(Math.random() * free.length)]!;
}

/** `url` must already have passed the URL rules. */
export function createWebhook(
  principal: Principal,
  input: CreateWebhookBody,
  secret: string,
  events: Webhook['events'],
  idempotency: Idempotency | undefined,
): Promise<Created<WebhookWithSecret>> {
  const { tenantId } = principal;
  // Creates of one tenant take turns within an instance; between instances, the slot guard decides.
  return oneAtATime(`${tenantId}/webhook-slots`, () =>
    createDocument<Omit<WebhookDocument, '_etag'>, WebhookWithSecret, number>({
      kind: { resourceOf: withSecret },
      principal,
      idempotency,
      request: input,
      sequence: 'webhooks',
      check: () => freeSlot(tenantId),
      prepare(number, slot) {
        const now = new Date().toISOString();
        const id = `WHK-${number}`;
        const document: Omit<WebhookDocument, '_etag'> = {
          id,
          tenantId,
          type: 'webhook',
          url: input.url,
          events,
          description: input.description ?? '',
          active: true,
          disabledReason: null,
          createdAt: now,
          updatedAt: now,
          secret,
          retiredSecrets: [],
          slot,
          failedInARow: 0,
        };
        const slotDocument: Omit<SlotDocument, '_etag'> = { id: slotId(slot), tenantId, type: 'webhookSlot', webhookId: id };
        // Taking the slot guards the create: a racing create that took it first makes this one pick again.
        return { document, guard: { operationType: 'Create', resourceBody: asJson(slotDocument) } };
      },
    }),
  );
}

export async function getWebhook(principal: Principal, id: string): Promise<Webhook> {
  return webhooks.resourceOf(await readVisible(webhooks, principal.tenantId, id));
}

export function readWebhook(tenantId: string, id: string): Promise<WebhookDocument | undefined> {
  return readDocument<WebhookDocument>(tenantId, id, webhooks.type);
}

export function listWebhooks(principal: Principal, query: ListWebhooksQuery): Promise<Page<Webhook>> {
  return listPage({ kind: webhooks, tenantId: principal.tenantId, filters: {}, orderBy: 'c.createdAt DESC', limit: query.limit, cursor: query.cursor });
}

/** Changes the fields given; switching a subscription on again forgets why it went off. `url` must already have passed the URL rules. */
export async function updateWebhook(principal: Principal, id: string, changes: UpdateWebhookBody, expected: ExpectedVersion): Promise<Webhook> {
  const updated = await changeDocument({
    kind: webhooks,
    tenantId: principal.tenantId,
    id,
    expected,
    change: (current) => ({
      ...current,
      ...changes,
      ...(changes.active !== undefined ? { disabledReason: null, failedInARow: 0 } : {}),
      updatedAt: new Date().toISOString(),
    }),
  });
  return webhooks.resourceOf(updated!);
}

export async function deleteWebhook(principal: Principal, id: string, expected: ExpectedVersion): Promise<void> {
  await changeDocument({
    kind: webhooks,
    tenantId: principal.tenantId,
    id,
    expected,
    change: () => REMOVE,
    // The slot goes with the subscription, in the same batch.
    alongside: (current) => [{ operationType: 'Delete', id: slotId(current.slot), partitionKey: current.tenantId }],
  });
}

/**
 * A new secret; every one it replaces keeps signing beside it for a day, however many rotations
 * follow. Each rotation changes the subscription as last stored (a write guarded by its etag, tried
 * again when another got in first), so concurrent rotations lose no secret.
 */
export async function rotateSecret(principal: Principal, id: string, secret: string): Promise<WebhookWithSecret> {
  const rotated = await changeDocument({
    kind: webhooks,
    tenantId: principal.tenantId,
    id,
    expected: undefined,
    change: (current) => {
      const now = Date.now();
      const stillSigning = liveRetiredSecrets(current, now);
      // After this rotation: the new secret, the one it replaces, and those still signing.
      if (stillSigning.length + 2 > MAX_SIGNING_SECRETS) throw conflict('tooManySigningSecrets', { limit: MAX_SIGNING_SECRETS });
      const replaced = { secret: current.secret, until: new Date(now + ROTATION_OVERLAP_MS).toISOString() };
      return { ...current, secret, retiredSecrets: [replaced, ...stillSigning], previousSecret: null, updatedAt: new Date(now).toISOString() };
    },
  });
  return withSecret({ ...rotated!, secret });
}

/** The subscription after a delivery ended: a success clears the count of failures, a 410 or the third failure in a row turns it off. */
export async function recordDeliveryEnd(subscription: WebhookDocument, ended: AfterAttempt): Promise<void> {
  // The usual case, a success after successes, changes nothing: no write.
  if (ended.status === 'Succeeded' && subscription.failedInARow === 0) return;
  const { tenantId, id } = subscription;
  await changeDocument({
    kind: webhooks,
    tenantId,
    id,
    expected: undefined,
    change(latest) {
      if (ended.status === 'Succeeded') return { ...latest, failedInARow: 0 };
      const failedInARow = latest.failedInARow + 1;
      const reason = ended.gone ? DISABLED_BECAUSE.gone : failedInARow >= FAILED_DELIVERIES_TO_DISABLE ? DISABLED_BECAUSE.failing : null;
      if (!reason || !latest.active) return { ...latest, failedInARow };
      return { ...latest, failedInARow, active: false, disabledReason: reason, updatedAt: new Date().toISOString() };
    },
  }).catch((error: unknown) => {
    // Deleted meanwhile: nothing to record.
    if (!(error instanceof ApiError && error.status === 404)) throw error;
  });
}

// ------------------------------------------------------------------ deliveries

export const deliveryIdOf = (eventId: string, webhookId: string) => `dlv_${eventId}_${webhookId}`;

/** A delivery not yet attempted, due after `claimMs`: the one who makes it holds its first attempt till then. */
function newDelivery(event: Pick<EventDocument, 'id' | 'tenantId' | 'eventType'>, webhookId: string, claimMs = 0): Omit<DeliveryDocument, '_etag'> {
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
    nextAttemptAt: new Date(Date.now() + claimMs).toISOString(),
    createdAt: now,
    updatedAt: now,
    ttl: EVENT_RETENTION_SECONDS,
  };
}

/** Whether a subscription receives an event: active, asked for it, and there when it happened (a ping: the one pinged). */
export function receives(subscription: WebhookDocument, event: EventDocument): boolean {
  if (!subscription.active) return false;
  if (event.webhookId) return subscription.id === event.webhookId;
  return subscription.events.includes(event.eventType) && subscription.createdAt <= event.timestamp;
}

/** A delivery about to be made: its document, and the subscription it goes to. */
export interface DeliveryToMake {
  document: Omit<DeliveryDocument, '_etag'>;
  subscription: WebhookDocument;
}

/** The deliveries of an event, one per subscription it is for, held by their maker for `claimMs`. */
export function deliveriesOf(event: EventDocument, subscriptions: readonly WebhookDocument[], claimMs: number): DeliveryToMake[] {
  return subscriptions
    .filter((subscription) => receives(subscription, event))
    .map((subscription) => ({ document: newDelivery(event, subscription.id, claimMs), subscription }));
}

/**
 * Makes deliveries of one tenant, all in one transactional batch where none exists yet (the usual
 * case); else each on its own, a delivery already made being read back as it is. A delivery's id is
 * its event's and its subscription's, so making the deliveries of an event twice makes them once.
 * Answers each delivery as stored, and whether this call made it (and so holds its first attempt).
 */
export async function makeDeliveries(tenantId: string, toMake: readonly DeliveryToMake[]): Promise<{ delivery: DeliveryDocument; made: boolean }[]> {
  const documents = await tenantData();
  if (toMake.length === 0) return [];
  if (toMake.length <= MAX_OPERATIONS) {
    const result = await sendBatch(
      documents,
      toMake.map(({ document }): OperationInput => ({ operationType: 'Create', resourceBody: asJson(document) })),
      tenantId,
    );
    if (result.every((operation) => operation.statusCode === 201))
      return result.map((operation) => ({ delivery: operation.resourceBody as unknown as DeliveryDocument, made: true }));
    if (!result.some((operation) => operation.statusCode === 409)) throw batchFailure(`Making the deliveries of tenant ${tenantId}`, result);
  }
  return Promise.all(
    toMake.map(async ({ document }) => {
      try {
        const { resource } = await documents.items.create(document);
        return { delivery: resource as unknown as DeliveryDocument, made: true };
      } catch (error) {
        if (cosmosStatus(error) !== 409) throw error;
        return { delivery: (await readDelivery(tenantId, document.id))!, made: false };
      }
    }),
  );
}

/** A ping: its event and its one delivery, due at once, written together; the change feed hands the delivery to its attempt. */
export async function ping(principal: Principal, id: string): Promise<DeliveryDocument> {
  const subscription = await readVisible(webhooks, principal.tenantId, id);
  if (!subscription.active) throw conflict('webhookInactive', { id });
  const event = eventDocument(principal.tenantId, { type: 'webhook.ping', data: webhooks.resourceOf(subscription), webhookId: id });
  const document = newDelivery(event, id);
  const result = await sendBatch(
    await tenantData(),
    [
      { operationType: 'Create', resourceBody: asJson(event) },
      { operationType: 'Create', resourceBody: asJson(document) },
    ],
    principal.tenantId,
  );
  if (result[1]?.statusCode !== 201) throw batchFailure('Storing a ping', result);
  return result[1].resourceBody as unknown as DeliveryDocument;
}

export function readDelivery(tenantId: string, id: string): Promise<DeliveryDocument | undefined> {
  return readDocument<DeliveryDocument>(tenantId, id, deliveries.type);
}

export const deliveryResource = (document: DeliveryDocument): Delivery => deliveries.resourceOf(document);

export function listDeliveries(principal: Principal, webhookId: string, query: ListDeliveriesQuery): Promise<Page<Delivery>> {
  return listPage({
    kind: deliveries,
    tenantId: principal.tenantId,
    filters: { webhookId: ['c.webhookId = @webhookId', webhookId] },
    orderBy: 'c.createdAt DESC',
    limit: query.limit,
    cursor: query.cursor,
  });
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
 * Takes the delivery's next attempt for this run: its due time moves past the attempt's longest
 * run, so the sweep leaves it alone, and a second run of the same attempt (a message delivered
 * twice) finds it taken. Undefined when another run took it first.
 */
export function claimAttempt(current: DeliveryDocument, leaseMs: number): Promise<DeliveryDocument | undefined> {
  return replaceDelivery(current, { ...current, nextAttemptAt: new Date(Date.now() + leaseMs).toISOString() });
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

/** A delivery of this subscription, to be sent again now: Pending, due at once. A subscription switched off gets nothing: 409, as a ping. */
export async function retryDelivery(principal: Principal, webhookId: string, deliveryId: string): Promise<DeliveryDocument> {
  const updated = await changeDocument({
    kind: deliveries,
    tenantId: principal.tenantId,
    id: deliveryId,
    expected: undefined,
    read: async () => {
      const [subscription, found] = await Promise.all([readVisible(webhooks, principal.tenantId, webhookId), readDelivery(principal.tenantId, deliveryId)]);
      if (!found || found.webhookId !== webhookId) throw deliveries.missing(deliveryId);
      if (!subscription.active) throw conflict('webhookInactive', { id: webhookId });
      return found;
    },
    change: (current) => ({ ...current, status: 'Pending' as const, nextAttemptAt: new Date().toISOString(), updatedAt: new Date().toISOString() }),
  });
  return updated!;
}

/**
 * Pending deliveries of any tenant that were due before `before` and that no sweep brought back since
 * they fell due: those whose queue message was lost, or whose attempt was cut off by a crash.
 */
export async function* overdueDeliveries(before: string): AsyncGenerator<Pick<DeliveryDocument, 'tenantId' | 'id' | '_etag'>[]> {
  const query = {
    query:
      "SELECT c.tenantId, c.id, c._etag FROM c WHERE c.type = 'delivery' AND c.status = 'Pending' AND c.nextAttemptAt < @before " +
      'AND (NOT IS_DEFINED(c.recoveredAt) OR c.recoveredAt < c.nextAttemptAt)',
    parameters: [{ name: '@before', value: before }],
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
