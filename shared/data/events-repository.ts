/** The tenant's events of the retention window, as GET /api/events lists them (newest first) and GET /api/events/{eventId} reads one; pings left out. */
import type { Principal } from '../auth/principal.js';
import { notFound } from '../errors.js';
import type { Event, ListEventsQuery } from '../schemas/events.js';
import { payloadOf, type EventDocument } from './events.js';
import type { Page } from './paging.js';
import { readVisible, type DocumentKind } from './tenant-data.js';
import { listPage } from './tenant-queries.js';

const events: DocumentKind<EventDocument, Event> = {
  type: 'event',
  resourceOf: (document) => ({ id: document.id, ...payloadOf(document) }),
  missing: (id) => notFound('eventNotFound', { id: id.slice(0, 100) }),
  // A ping is a test of one subscription, not a change to catch up on.
  hidden: { is: (document) => document.webhookId !== undefined, where: 'IS_DEFINED(c.webhookId)' },
};

export function listEvents(principal: Principal, query: ListEventsQuery): Promise<Page<Event>> {
  // `@type` is the kind's: the event's type is `@eventType`.
  const values = { ...query, eventType: query.type };
  return listPage(events, principal.tenantId, values, {
    filters: { eventType: 'c.eventType = @eventType', since: 'c.timestamp >= @since' },
    orderBy: 'c.timestamp DESC',
  });
}

export async function getEvent(principal: Principal, id: string): Promise<Event> {
  return events.resourceOf(await readVisible(events, principal.tenantId, id));
}
