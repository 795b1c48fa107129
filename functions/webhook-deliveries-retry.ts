import { app } from '@azure/functions';
import { deliveryResource, retryDelivery } from '../shared/data/webhooks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { enqueueWebhookWork } from '../shared/queues.js';
import { delivery, deliveryIdParameter, webhookIdParameter } from '../shared/schemas/webhooks.js';

export const webhookDeliveriesRetry = endpoint({
  permission: 'webhooks:manage',
  params: { webhookId: webhookIdParameter, deliveryId: deliveryIdParameter },
  success: { status: 202, body: delivery },
  docs: {
    summary: 'Send a delivery again now',
    description: 'One more attempt, now, signed as every attempt is; a delivery that had failed is Pending again until it ends.',
    errors: { 404: ['webhookNotFound', 'deliveryNotFound'] },
  },
  async handle({ principal, params }) {
    const pending = await retryDelivery(principal, params.webhookId, params.deliveryId);
    // If the queue cannot take it now, the sweep finds the delivery due and queues it.
    await enqueueWebhookWork({ tenantId: principal.tenantId, deliveryId: pending.id, attempt: pending.attempts + 1 }).catch(() => undefined);
    return { body: deliveryResource(pending) };
  },
});

app.http('webhook-deliveries-retry', {
  methods: ['POST'],
  route: 'webhooks/{webhookId}/deliveries/{deliveryId}/retry',
  authLevel: 'anonymous',
  handler: webhookDeliveriesRetry,
});
