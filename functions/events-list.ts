import { app } from '@azure/functions';
import { listEvents } from '../shared/data/events-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { readsRagJobEvents } from '../shared/roles.js';
import { apiRoute } from '../shared/http/routes.js';
import { eventListItem, listEventsQuery } from '../shared/schemas/events.js';

export const eventsList = endpoint({
  permission: 'events:read',
  query: listEventsQuery,
  success: { status: 200, page: eventListItem },
  docs: {
    summary: 'List events',
    description:
      "The tenant's events of the last 7 days, each as its webhook body with its `id` (the deliveries' `webhook-id`), newest first, " +
      'or oldest first with `sort=timestamp`: what a receiver that was down catches up with, from a little before the last event it ' +
      'saw (`since`), following `Link` to the end and de-duplicating on `id`. `type` keeps one kind of event; `since` keeps those at or ' +
      "after a time. Pings are not listed, nor RAG jobs' events for a role that may not read RAG jobs (only LMS.Manager and LMS.Admin may).",
  },
  async handle({ principal, query }) {
    return { page: await listEvents(principal.tenantId, readsRagJobEvents(principal.roles), query) };
  },
});

app.http('events-list', { methods: ['GET'], route: apiRoute('events'), authLevel: 'anonymous', handler: eventsList });
