/**
 * The outbox of events. An event is written in the same transactional batch as the change it
 * reports, in the tenant's partition: a change that fails writes no event, and a change that succeeds
 * cannot lose its event. Nothing else happens on the request's way: Cosmos DB's change feed hands
 * each event to functions/changes-relay.ts, which makes its deliveries. Events are kept a week, and
 * listed by GET /api/events (shared/data/events-repository.ts).
 */
import { randomUUID } from 'node:crypto';
import type { JSONObject, OperationInput } from '@azure/cosmos';
import type { EventPayload, EventType } from '../schemas/events.js';
import { container } from './cosmos.js';

/** An event as a change describes it: its type and what a receiver gets as `data`. */
export interface NewEvent {
  type: EventType;
  data: Record<string, unknown>;
  /** Only this subscription receives it (a ping). */
  webhookId?: string;
}

export interface EventDocument {
  id: string;
  tenantId: string;
  type: 'event';
  eventType: EventType;
  timestamp: string;
  data: Record<string, unknown>;
  webhookId?: string;
  ttl: number;
  _etag: string;
}

/** Events stay a week: long enough for every retry of every delivery, for a manual one after, and for catching up. */
export const EVENT_RETENTION_SECONDS = 7 * 24 * 60 * 60;

export function eventDocument(tenantId: string, event: NewEvent): Omit<EventDocument, '_etag'> {
  return {
    // Standard Webhooks' message ids look like this; receivers de-duplicate on it.
    id: `msg_${randomUUID().replaceAll('-', '')}`,
    tenantId,
    type: 'event',
    eventType: event.type,
    timestamp: new Date().toISOString(),
    data: event.data,
    ...(event.webhookId ? { webhookId: event.webhookId } : {}),
    ttl: EVENT_RETENTION_SECONDS,
  };
}

/** The batch operation that writes a change's event beside the change. */
export function eventWrite(tenantId: string, event: NewEvent): OperationInput {
  return { operationType: 'Create', resourceBody: eventDocument(tenantId, event) as unknown as JSONObject };
}

export async function readEvent(tenantId: string, id: string): Promise<EventDocument | undefined> {
  const { resource } = await (await container('tenantData')).item(id, tenantId).read<EventDocument>();
  return resource?.type === 'event' ? resource : undefined;
}

/** What a receiver gets for the event. */
export function payloadOf(event: Pick<EventDocument, 'eventType' | 'timestamp' | 'data'>): EventPayload {
  return { type: event.eventType, timestamp: event.timestamp, data: event.data };
}
