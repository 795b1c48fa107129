import { app } from '@azure/functions';
import { deliveryResource, retryDelivery } from '../shared/data/deliveries-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { delivery, deliveryIdParameter, webhookIdParameter } from '../shared/schemas/webhooks.js';

export const webhookDeliveriesRetry = endpoint({
  permission: 'webhooks:manage',
  params: { webhookId: webhookIdParameter, deliveryId: deliveryIdParameter },
  success: { status: 202, body: delivery },
  docs: {
    summary: 'Send a delivery again now',
    description:
      'One more attempt, now, signed as every attempt is; a delivery that had failed is Pending again until it ends. ' +
      'A subscription switched off gets nothing (409), as with a ping.',
    errors: { 409: ['webhookInactive'] },
  },
  async handle({ principal, params }) {
    return { body: deliveryResource(await retryDelivery(principal.tenantId, params.webhookId, params.deliveryId)) };
  },
});

app.http('webhook-deliveries-retry', {
  methods: ['POST'],
  route: apiRoute('webhooks/{webhookId}/deliveries/{deliveryId}/retry'),
  authLevel: 'anonymous',
  handler: webhookDeliveriesRetry,
});
