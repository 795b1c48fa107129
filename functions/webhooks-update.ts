import { app } from '@azure/functions';
import { webhookSettings } from '../shared/settings/read.js';
import { updateWebhook } from '../shared/data/webhooks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { updateWebhookBody, webhook, webhookIdParameter } from '../shared/schemas/webhooks.js';
import { checkWebhookUrl, URL_RULES } from '../shared/webhooks/url-rules.js';

export const webhooksUpdate = endpoint({
  permission: 'webhooks:manage',
  params: { webhookId: webhookIdParameter },
  body: updateWebhookBody,
  honours: ['If-Match'],
  success: { status: 200, body: webhook },
  docs: {
    summary: 'Change a webhook subscription',
    description:
      'Changes the fields given. `active: true` switches a subscription on again, also one the API switched off (`disabledReason` goes). ' +
      'A PUT of what is stored changes nothing: the same `updatedAt` and ETag; `active` as it already is switches nothing.',
    errors: { 400: URL_RULES },
  },
  async handle({ principal, params, body, ifMatch }) {
    if (body.url !== undefined) await checkWebhookUrl(body.url, webhookSettings().allowLoopback);
    return { body: await updateWebhook(principal.tenantId, params.webhookId, body, ifMatch) };
  },
});

app.http('webhooks-update', { methods: ['PUT'], route: apiRoute('webhooks/{webhookId}'), authLevel: 'anonymous', handler: webhooksUpdate });
