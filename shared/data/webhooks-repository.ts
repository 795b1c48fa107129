/**
 * Webhook subscriptions, in the tenant's partition. A subscription holds one of the tenant's 20
 * slots (a slot document created in the same batch, removed with it), so that racing creates can
 * never make a 21st. Its secrets: the current one, and those rotations replaced in the last day.
 * Their deliveries are in deliveries-repository.ts.
 */
import type { Principal } from '../auth/principal.js';
import { DISABLED_BECAUSE, FAILED_DELIVERIES_TO_DISABLE, type AfterAttempt } from '../domain/webhooks.js';
import type { ExpectedVersion } from '../domain/versions.js';
import { conflict, notFound, RuleError } from '../domain/errors.js';
import {
  MAX_WEBHOOKS_PER_TENANT,
  webhook,
  webhookWithSecret,
  type CreateWebhookBody,
  type ListWebhooksQuery,
  type UpdateWebhookBody,
  type Webhook,
  type WebhookWithSecret,
} from '../schemas/webhooks.js';
import type { Idempotency } from './idempotency.js';
import type { Page } from './paging.js';
import {
  asJson,
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
  /** Which deliveries those were (the last few): one sent again by hand that fails again is not counted twice. */
  failedDeliveryIds?: string[];
}

interface SlotDocument extends StoredDocument {
  type: 'webhookSlot';
  webhookId: string;
}

export const webhooks: DocumentKind<WebhookDocument, Webhook> = {
  type: 'webhook',
  resourceOf: fieldsOf(webhook),
  missing: (id) => notFound('webhookNotFound', { id: id.slice(0, 100) }),
};

/** The subscription with its secret: only a create and a rotation answer with it. */
const withSecret = fieldsOf(webhookWithSecret);

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
  return listPage(webhooks, principal.tenantId, query, { orderBy: 'c.createdAt DESC' });
}

/**
 * Changes the fields given. Switching a subscription on or off forgets why it went off and its failures
 * in a row; `active` as it already is switches nothing (a subscription that is on keeps counting its
 * failures, one the API turned off keeps its reason), so that a PUT of what is stored changes nothing.
 * `url` must already have passed the URL rules.
 */
export async function updateWebhook(principal: Principal, id: string, changes: UpdateWebhookBody, expected: ExpectedVersion): Promise<Webhook> {
  const updated = await changeDocument({
    kind: webhooks,
    tenantId: principal.tenantId,
    id,
    expected,
    change: (current) => ({
      ...current,
      ...changes,
      ...(changes.active !== undefined && changes.active !== current.active ? { disabledReason: null, failedInARow: 0, failedDeliveryIds: [] } : {}),
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

/**
 * The subscription after one of its deliveries ended: a success clears the count of failures, a 410
 * or the third delivery in a row to end Failed turns it off. A delivery sent again by hand that ends
 * Failed again is still one delivery: it counts once.
 */
export async function recordDeliveryEnd(subscription: WebhookDocument, deliveryId: string, ended: AfterAttempt): Promise<void> {
  const { tenantId, id } = subscription;
  await changeDocument({
    kind: webhooks,
    tenantId,
    id,
    expected: undefined,
    change(latest) {
      // Judged on the subscription as stored, not as the attempt read it before it was sent: another delivery may
      // have ended Failed meanwhile. The usual case, a success after successes, changes nothing: no write.
      if (ended.status === 'Succeeded') return latest.failedInARow === 0 ? latest : { ...latest, failedInARow: 0, failedDeliveryIds: [] };
      const counted = latest.failedDeliveryIds ?? [];
      const again = counted.includes(deliveryId);
      const failedInARow = again ? latest.failedInARow : latest.failedInARow + 1;
      const failedDeliveryIds = again ? counted : [...counted, deliveryId].slice(-FAILED_DELIVERIES_TO_DISABLE);
      const reason = ended.gone ? DISABLED_BECAUSE.gone : failedInARow >= FAILED_DELIVERIES_TO_DISABLE ? DISABLED_BECAUSE.failing : null;
      if (!reason || !latest.active) return { ...latest, failedInARow, failedDeliveryIds };
      return { ...latest, failedInARow, failedDeliveryIds, active: false, disabledReason: reason, updatedAt: new Date().toISOString() };
    },
  }).catch((error: unknown) => {
    // Deleted meanwhile: nothing to record.
    if (!(error instanceof RuleError && error.refusal === 'notFound')) throw error;
  });
}
