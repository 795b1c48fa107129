import { app } from '@azure/functions';
import { getEvent } from '../shared/data/events-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { readsRagJobEvents } from '../shared/roles.js';
import { apiRoute } from '../shared/http/routes.js';
import { event, eventIdParameter } from '../shared/schemas/events.js';

export const eventsGet = endpoint({
  permission: 'events:read',
  params: { eventId: eventIdParameter },
  honours: ['If-None-Match'],
  success: { status: 200, body: event },
  docs: {
    summary: 'Read an event',
    description:
      "An event of the last 7 days, as its webhook body with its `id`; it never changes. A RAG job's event is a 404 for a role that may not read RAG jobs.",
  },
  async handle({ principal, params }) {
    return { body: await getEvent(principal.tenantId, readsRagJobEvents(principal.roles), params.eventId) };
  },
});

app.http('events-get', { methods: ['GET'], route: apiRoute('events/{eventId}'), authLevel: 'anonymous', handler: eventsGet });
