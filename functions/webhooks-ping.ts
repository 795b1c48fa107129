import { app } from '@azure/functions';
import { deliveryResource, ping } from '../shared/data/deliveries-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { delivery, webhookIdParameter } from '../shared/schemas/webhooks.js';

export const webhooksPing = endpoint({
  permission: 'webhooks:manage',
  params: { webhookId: webhookIdParameter },
  success: { status: 202, body: delivery },
  docs: {
    summary: 'Send a webhook.ping event',
    description: 'To this subscription only, as any event is sent. The answer is the delivery; follow it in the deliveries list.',
    errors: { 409: ['webhookInactive'] },
  },
  async handle({ principal, params }) {
    return { body: deliveryResource(await ping(principal.tenantId, params.webhookId)) };
  },
});

app.http('webhooks-ping', { methods: ['POST'], route: apiRoute('webhooks/{webhookId}/ping'), authLevel: 'anonymous', handler: webhooksPing });
