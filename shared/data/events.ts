/**
 * The outbox of webhook events. An event is written in the same transactional batch as the change
 * it reports, in the tenant's partition, marked pending: a change that fails writes no event, and a
 * change that succeeds cannot lose its event. After the batch commits, a queue message announces
 * the event; if the queue cannot take it, the sweep (functions/webhooks-sweep.ts) finds the event
 * still pending and announces it. Handing an event to its subscriptions clears `pending`.
 */
import { randomUUID } from 'node:crypto';
import type { JSONObject, OperationInput } from '@azure/cosmos';
import { enqueueWebhookWork } from '../queues.js';
import type { EventPayload, EventType } from '../schemas/webhooks.js';
import { container } from './cosmos.js';
import type { StoredDocument } from './tenant-data.js';

const tenantData = () => container('tenantData');

/** An event as a change describes it: its type and what a receiver gets as `data`. */
export interface PendingEvent {
  type: EventType;
  data: Record<string, unknown>;
  /** Only this subscription receives it (a ping). */
  webhookId?: string;
}

export interface EventDocument extends StoredDocument {
  type: 'event';
  eventType: EventType;
  timestamp: string;
  data: Record<string, unknown>;
  webhookId?: string;
  /** Until the event has been handed to its subscriptions. */
  pending: boolean;
  ttl: number;
}

/** Events stay a week: long enough for every retry of every delivery, and for a manual one after. */
export const EVENT_RETENTION_SECONDS = 7 * 24 * 60 * 60;

/** The event document for a change, still to be handed to its subscriptions. */
export function eventDocument(tenantId: string, event: PendingEvent): Omit<EventDocument, '_etag'> {
  return {
    // Standard Webhooks' message ids look like this; receivers de-duplicate on it.
    id: `msg_${randomUUID().replaceAll('-', '')}`,
    tenantId,
    type: 'event',
    eventType: event.type,
    timestamp: new Date().toISOString(),
    data: event.data,
    ...(event.webhookId ? { webhookId: event.webhookId } : {}),
    pending: true,
    ttl: EVENT_RETENTION_SECONDS,
  };
}

/** The batch operation that writes a change's event beside the change, and the event's id. */
export function eventWrite(tenantId: string, event: PendingEvent): { id: string; operation: OperationInput } {
  const document = eventDocument(tenantId, event);
  return { id: document.id, operation: { operationType: 'Create', resourceBody: document as unknown as JSONObject } };
}

/**
 * Announces committed events on the webhooks queue, without making the change wait for the queue:
 * one that cannot be announced now is announced by the sweep.
 */
export function announce(tenantId: string, eventIds: readonly string[]): void {
  for (const eventId of eventIds) {
    enqueueWebhookWork({ tenantId, eventId }).catch((error: unknown) => {
      console.warn(`Webhook event ${eventId} could not be queued now; the sweep will send it (${error instanceof Error ? error.message : String(error)})`);
    });
  }
}

export async function readEvent(tenantId: string, id: string): Promise<EventDocument | undefined> {
  const { resource } = await (await tenantData()).item(id, tenantId).read<EventDocument>();
  return resource?.type === 'event' ? resource : undefined;
}

/** What a receiver gets for the event. */
export function payloadOf(event: EventDocument): EventPayload {
  return { type: event.eventType, timestamp: event.timestamp, data: event.data };
}

/** Events of any tenant still pending since before `before`: those whose announcement was lost. */
export async function* overdueEvents(before: string): AsyncGenerator<{ tenantId: string; id: string }[]> {
  const query = {
    query: "SELECT c.tenantId, c.id FROM c WHERE c.type = 'event' AND c.pending = true AND c.timestamp < @before",
    parameters: [{ name: '@before', value: before }],
  };
  const pages = (await tenantData()).items.query<{ tenantId: string; id: string }>(query, { maxItemCount: 100 });
  while (pages.hasMoreResults()) {
    const { resources } = await pages.fetchNext();
    if (resources.length) yield resources;
  }
}
