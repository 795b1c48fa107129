import { app } from '@azure/functions';
import { webhookSettings } from '../shared/settings/read.js';
import { createWebhook } from '../shared/data/webhooks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { CHANGE_EVENT_TYPES } from '../shared/schemas/events.js';
import { createWebhookBody, webhook, webhookWithSecret } from '../shared/schemas/webhooks.js';
import { checkWebhookUrl, URL_RULES } from '../shared/webhooks/url-rules.js';
import { newSecret } from '../shared/webhooks/signing.js';

export const webhooksCreate = endpoint({
  permission: 'webhooks:manage',
  body: createWebhookBody,
  honours: ['Idempotency-Key'],
  success: { status: 201, body: webhookWithSecret, versionOf: webhook, headers: ['Location'] },
  docs: {
    summary: 'Subscribe to events',
    description:
      'Events are POSTed to `url`, signed as the Standard Webhooks specification says, at least once (receivers de-duplicate on `webhook-id`). ' +
      'The `secret` that keys the signatures is in this answer only. The URL must be https, without a user name or password, at most 2,048 ' +
      'characters, and its host must not resolve to a private, loopback, link-local, shared, multicast or cloud-metadata address. ' +
      'At most 20 subscriptions per tenant.',
    errors: { 400: URL_RULES, 409: ['tooManyWebhooks'] },
  },
  async handle({ principal, body, idempotency }) {
    await checkWebhookUrl(body.url, webhookSettings().allowLoopback);
    return { created: await createWebhook(principal.tenantId, principal.objectId, body, newSecret(), body.events ?? CHANGE_EVENT_TYPES, idempotency) };
  },
});

app.http('webhooks-create', { methods: ['POST'], route: apiRoute('webhooks'), authLevel: 'anonymous', handler: webhooksCreate });
