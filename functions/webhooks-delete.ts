import { app } from '@azure/functions';
import { deleteWebhook } from '../shared/data/webhooks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { webhookIdParameter } from '../shared/schemas/webhooks.js';

export const webhooksDelete = endpoint({
  permission: 'webhooks:manage',
  params: { webhookId: webhookIdParameter },
  honours: ['If-Match'],
  success: { status: 204 },
  docs: { summary: 'Delete a webhook subscription', description: 'Its deliveries under way stop.' },
  async handle({ principal, params, ifMatch }) {
    await deleteWebhook(principal.tenantId, params.webhookId, ifMatch);
    return {};
  },
});

app.http('webhooks-delete', { methods: ['DELETE'], route: apiRoute('webhooks/{webhookId}'), authLevel: 'anonymous', handler: webhooksDelete });
