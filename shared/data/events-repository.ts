/**
 * The tenant's events of the retention window, as GET /api/events lists them (newest or oldest first) and
 * GET /api/events/{eventId} reads one; pings left out.
 */
import { notFound } from '../domain/errors.js';
import { EVENT_TYPES, type Event, type ListEventsQuery } from '../schemas/events.js';
import { payloadOf, type EventDocument } from './events.js';
import type { Page } from './paging.js';
import { readVisible, type DocumentKind } from './tenant-data.js';
import { listPage, sortOrder } from './tenant-queries.js';

// A ping is a test of one subscription, not a change to catch up on.
const isPing = (document: EventDocument) => document.webhookId !== undefined;
const PING = 'IS_DEFINED(c.webhookId)';
// An event shows its resource as GET shows it: a RAG job's, only to a role that may read RAG jobs.
const RAG_JOB_EVENTS: readonly string[] = EVENT_TYPES.filter((type) => type.startsWith('rag.job.'));

const events: DocumentKind<EventDocument, Event> = {
  type: 'event',
  resourceOf: (document) => ({ id: document.id, ...payloadOf(document) }),
  missing: (id) => notFound('eventNotFound', { id: id.slice(0, 100) }),
  hidden: { is: isPing, where: PING },
};

const withoutRagJobs: DocumentKind<EventDocument, Event> = {
  ...events,
  hidden: {
    is: (document) => isPing(document) || RAG_JOB_EVENTS.includes(document.eventType),
    where: `${PING} OR c.eventType IN (${RAG_JOB_EVENTS.map((type) => `'${type}'`).join(', ')})`,
  },
};

/** The events a caller reads: RAG jobs' only when it may run them (the caller's roles say). */
const visibleTo = (withRagJobs: boolean) => (withRagJobs ? events : withoutRagJobs);

export function listEvents(tenantId: string, withRagJobs: boolean, query: ListEventsQuery): Promise<Page<Event>> {
  // `@type` is the kind's: the event's type is `@eventType`.
  const values = { ...query, eventType: query.type };
  return listPage(visibleTo(withRagJobs), tenantId, values, {
    filters: { eventType: 'c.eventType = @eventType', since: 'c.timestamp >= @since' },
    orderBy: sortOrder(query.sort, { timestamp: 'c.timestamp' }),
  });
}

export async function getEvent(tenantId: string, withRagJobs: boolean, id: string): Promise<Event> {
  const kind = visibleTo(withRagJobs);
  return kind.resourceOf(await readVisible(kind, tenantId, id));
}
