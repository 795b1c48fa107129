import { app } from '@azure/functions';
import { getWebhook } from '../shared/data/webhooks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { webhook, webhookIdParameter } from '../shared/schemas/webhooks.js';

export const webhooksGet = endpoint({
  permission: 'webhooks:manage',
  params: { webhookId: webhookIdParameter },
  honours: ['If-None-Match'],
  success: { status: 200, body: webhook },
  docs: {
    summary: 'Read a webhook subscription',
    description: 'A subscription the API switched off shows `active: false` and why in `disabledReason`.',
  },
  async handle({ principal, params }) {
    return { body: await getWebhook(principal.tenantId, params.webhookId) };
  },
});

app.http('webhooks-get', { methods: ['GET'], route: apiRoute('webhooks/{webhookId}'), authLevel: 'anonymous', handler: webhooksGet });
