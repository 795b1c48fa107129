import { z } from 'zod';
import { patterned } from './validation.js';
import { listedWithETag, pagingParameters, type PathParameter, sortParameter, timeParameter, timestamp } from './common.js';

/** Every event there is; `webhook.ping` only ever goes to the subscription pinged, and is not listed. */
export const EVENT_TYPES = [
  'project.created',
  'project.updated',
  'project.deleted',
  'task.created',
  'task.updated',
  'task.deleted',
  'rag.job.succeeded',
  'rag.job.failed',
  'webhook.ping',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The events of changes: what a subscription asks for, and what the events list shows. */
export const CHANGE_EVENT_TYPES = EVENT_TYPES.filter((type): type is Exclude<EventType, 'webhook.ping'> => type !== 'webhook.ping');

/** What a receiver gets: the event's type, when it happened, and the resource as `GET` shows it after the change. */
export const eventPayload = z.object({
  type: z.enum(EVENT_TYPES),
  timestamp,
  data: z.record(z.string(), z.unknown()),
});
export type EventPayload = z.infer<typeof eventPayload>;

/** An event's id, as Standard Webhooks' message ids look. */
export const eventId = patterned(/^msg_[0-9a-f]{32}$/, 'idForm', { example: 'msg_2f1c9a0e4b7d4e8a9c3b1d2e5f6a7b8c' });
export const eventIdParameter: PathParameter = { schema: eventId, notFound: 'eventNotFound', example: 'msg_2f1c9a0e4b7d4e8a9c3b1d2e5f6a7b8c' };

/** An event as the events list shows it: its webhook body, and its id (the `webhook-id` of its deliveries). */
export const event = eventPayload.extend({
  id: eventId.describe('The `webhook-id` every delivery of this event carries: the key to de-duplicate on'),
});
export type Event = z.infer<typeof event>;

/** An event as a list shows it: with `etag`, the ETag a read of it answers. */
export const eventListItem = listedWithETag(event);

export const listEventsQuery = z.strictObject({
  type: z.enum(CHANGE_EVENT_TYPES).optional(),
  since: timeParameter('Only events at or after this time').optional(),
  sort: sortParameter(['timestamp'])
    .default('-timestamp')
    .describe('`-timestamp`: newest first; `timestamp`: oldest first, the order to catch up in after downtime'),
  ...pagingParameters,
});
export type ListEventsQuery = z.infer<typeof listEventsQuery>;
