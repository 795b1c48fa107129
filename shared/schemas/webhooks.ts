import { z } from 'zod';
import { atLeastOneField, patterned, text } from './validation.js';
import { listedWithETag, pagingParameters, type PathParameter, timestamp } from './common.js';
import { CHANGE_EVENT_TYPES, EVENT_TYPES } from './events.js';

export const MAX_WEBHOOKS_PER_TENANT = 20;
export const MAX_WEBHOOK_URL_LENGTH = 2048;

export const webhookId = patterned(/^WHK-[1-9]\d{0,14}$/, 'idForm', { example: 'WHK-1001' });
export const webhookIdParameter: PathParameter = { schema: webhookId, notFound: 'webhookNotFound', example: 'WHK-1001' };

/** A delivery's id: the event's and the subscription's, so that one event reaches one subscription once. */
export const deliveryId = patterned(/^dlv_[\w-]{1,80}$/, 'idForm', { example: 'dlv_msg_2f1c9a0e4b7d4e8a9c3b1d2e5f6a7b8c_WHK-1001' });
export const deliveryIdParameter: PathParameter = {
  schema: deliveryId,
  notFound: 'deliveryNotFound',
  example: 'dlv_msg_2f1c9a0e4b7d4e8a9c3b1d2e5f6a7b8c_WHK-1001',
};

export const webhook = z.object({
  id: webhookId,
  url: z.string(),
  events: z.array(z.enum(EVENT_TYPES)),
  description: z.string(),
  active: z.boolean(),
  disabledReason: z.string().nullable().describe('Why the API turned the subscription off, while `active` is false because of it'),
  createdAt: timestamp,
  updatedAt: timestamp,
});
export type Webhook = z.infer<typeof webhook>;

/** A subscription as a list shows it: with `etag`, the ETag a read of it answers. */
export const webhookListItem = listedWithETag(webhook);

/** Only the answers to a create and to a rotation show the secret, which is no part of the webhook's version: they declare `versionOf: webhook`. */
export const webhookWithSecret = webhook.extend({
  secret: z
    .string()
    .describe(
      '`whsec_` and the base64 of 32 random bytes: the key of the HMAC-SHA256 signatures. Shown only here. After a rotation, the ' +
        'secrets of the last 24 hours keep signing beside it (every delivery carries a signature for each).',
    ),
});
export type WebhookWithSecret = z.infer<typeof webhookWithSecret>;

/** A URL as a subscription takes it; the rules that need the network (what the host resolves to) are checked beside. */
const url = z.string().max(MAX_WEBHOOK_URL_LENGTH);
/** A subscribable event; `webhook.ping` is sent on request, not subscribed to, and the 400 says so rather than only that it is not one of the others. */
const subscribableEvent = z
  .string()
  .check((ctx) => {
    if (ctx.value === 'webhook.ping') ctx.issues.push({ code: 'custom', input: ctx.value, params: { messageKey: 'pingNotSubscribable' } });
  })
  .pipe(z.enum(CHANGE_EVENT_TYPES))
  // The API description shows the events a body may name, as the pipe's input alone (a string) would not.
  .meta({ enum: CHANGE_EVENT_TYPES });
/** Subscribable events, each once. */
const events = z
  .array(subscribableEvent)
  .min(1)
  .transform((types) => [...new Set(types)]);

export const createWebhookBody = z.strictObject({
  url,
  events: events.optional(),
  description: text({ min: 0, max: 500 }).optional(),
});
export type CreateWebhookBody = z.infer<typeof createWebhookBody>;

export const updateWebhookBody = atLeastOneField(
  z.strictObject({
    url: url.optional(),
    events: events.optional(),
    description: text({ min: 0, max: 500 }).optional(),
    active: z.boolean().optional(),
  }),
);
export type UpdateWebhookBody = z.infer<typeof updateWebhookBody>;

export const listWebhooksQuery = z.strictObject({ ...pagingParameters });
export type ListWebhooksQuery = z.infer<typeof listWebhooksQuery>;

export const DELIVERY_STATUSES = ['Pending', 'Succeeded', 'Failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const delivery = z.object({
  id: deliveryId,
  eventId: z.string().describe('The `webhook-id` every attempt of this delivery carries'),
  type: z.enum(EVENT_TYPES),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int(),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  nextAttemptAt: timestamp.nullable(),
  createdAt: timestamp,
});
export type Delivery = z.infer<typeof delivery>;

export const listDeliveriesQuery = z.strictObject({ ...pagingParameters });
export type ListDeliveriesQuery = z.infer<typeof listDeliveriesQuery>;

/** The most attempts one webhooks queue message carries. */
export const ATTEMPTS_PER_MESSAGE = 50;

/**
 * What the webhooks queue carries: attempts of deliveries, made side by side: those the change feed
 * relay found due in a page of changes, or one attempt put there to wait for its time in the retry
 * schedule; `waited` counts the times they went back to wait for their tenants' turns.
 */
export const webhookMessage = z.object({
  attempts: z
    .array(z.object({ tenantId: z.string().min(1), deliveryId, attempt: z.number().int().min(1) }))
    .min(1)
    .max(ATTEMPTS_PER_MESSAGE),
  waited: z.number().int().min(1).optional(),
});
export type WebhookMessage = z.infer<typeof webhookMessage>;
