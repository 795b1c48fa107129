/**
 * Webhook subscriptions, in the tenant's partition. A subscription holds one of the tenant's 20
 * slots (a slot document created in the same batch, removed with it), so that racing creates can
 * never make a 21st. What its secrets and failures make of it is shared/domain/webhooks.ts's.
 * Their deliveries are in deliveries-repository.ts.
 */
import { afterDeliveryEnd, changed, freeSlot, rotated, type AfterAttempt, type SubscriptionState } from '../domain/webhooks.js';
import type { ExpectedVersion } from '../domain/versions.js';
import { notFound, RuleError } from '../domain/errors.js';
import {
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

export interface WebhookDocument extends Webhook, SubscriptionState, StoredDocument {
  type: 'webhook';
  /** Which of the tenant's slots the subscription holds. */
  slot: number;
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

/** Every subscription of the tenant: at most 20, so one query. */
export async function allWebhooks(tenantId: string): Promise<WebhookDocument[]> {
  const query = {
    query: "SELECT * FROM c WHERE c.tenantId = @tenantId AND c.type = 'webhook'",
    parameters: [{ name: '@tenantId', value: tenantId }],
  };
  const { resources } = await (await tenantData()).items.query<WebhookDocument>(query, { partitionKey: tenantId, maxItemCount: FULL_SCAN_PAGE }).fetchAll();
  return resources;
}

/** `url` must already have passed the URL rules. */
export function createWebhook(
  tenantId: string,
  actor: string,
  input: CreateWebhookBody,
  secret: string,
  events: Webhook['events'],
  idempotency: Idempotency | undefined,
): Promise<Created<WebhookWithSecret>> {
  // Creates of one tenant take turns within an instance; between instances, the slot guard decides.
  return oneAtATime(`${tenantId}/webhook-slots`, () =>
    createDocument<Omit<WebhookDocument, '_etag'>, WebhookWithSecret, number>({
      kind: { resourceOf: withSecret },
      tenantId,
      actor,
      idempotency,
      request: input,
      sequence: 'webhooks',
      check: async () => freeSlot(new Set((await allWebhooks(tenantId)).map((subscription) => subscription.slot))),
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

export async function getWebhook(tenantId: string, id: string): Promise<Webhook> {
  return webhooks.resourceOf(await readVisible(webhooks, tenantId, id));
}

export function readWebhook(tenantId: string, id: string): Promise<WebhookDocument | undefined> {
  return readDocument<WebhookDocument>(tenantId, id, webhooks.type);
}

export function listWebhooks(tenantId: string, query: ListWebhooksQuery): Promise<Page<Webhook>> {
  return listPage(webhooks, tenantId, query, { orderBy: 'c.createdAt DESC' });
}

/** Changes the fields given, as shared/domain/webhooks.ts's `changed` says. `url` must already have passed the URL rules. */
export async function updateWebhook(tenantId: string, id: string, changes: UpdateWebhookBody, expected: ExpectedVersion): Promise<Webhook> {
  const updated = await changeDocument({
    kind: webhooks,
    tenantId,
    id,
    expected,
    change: (current) => changed(current, changes, new Date().toISOString()),
  });
  return webhooks.resourceOf(updated!);
}

export async function deleteWebhook(tenantId: string, id: string, expected: ExpectedVersion): Promise<void> {
  await changeDocument({
    kind: webhooks,
    tenantId,
    id,
    expected,
    change: () => REMOVE,
    // The slot goes with the subscription, in the same batch.
    alongside: (current) => [{ operationType: 'Delete', id: slotId(current.slot), partitionKey: current.tenantId }],
  });
}

/**
 * A new secret, `rotated` in with those still signing. Each rotation changes the subscription as last
 * stored (a write guarded by its etag, tried again when another got in first), so concurrent rotations lose no secret.
 */
export async function rotateSecret(tenantId: string, id: string, secret: string): Promise<WebhookWithSecret> {
  const stored = await changeDocument({
    kind: webhooks,
    tenantId,
    id,
    expected: undefined,
    change: (current) => {
      const now = Date.now();
      return { ...current, ...rotated(current, secret, now), updatedAt: new Date(now).toISOString() };
    },
  });
  return withSecret({ ...stored!, secret });
}

/** Records the end of one of the subscription's deliveries (`afterDeliveryEnd`); no write when that changes nothing. */
export async function recordDeliveryEnd(subscription: WebhookDocument, deliveryId: string, ended: AfterAttempt): Promise<void> {
  const { tenantId, id } = subscription;
  await changeDocument({
    kind: webhooks,
    tenantId,
    id,
    expected: undefined,
    // Judged on the subscription as stored, not as the attempt read it before it was sent: another delivery may have ended Failed meanwhile.
    change: (latest) => afterDeliveryEnd(latest, deliveryId, ended, new Date().toISOString()),
  }).catch((error: unknown) => {
    // Deleted meanwhile: nothing to record.
    if (!(error instanceof RuleError && error.refusal === 'notFound')) throw error;
  });
}
