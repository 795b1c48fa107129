import { app } from '@azure/functions';
import { deliveryResource, ping } from '../shared/data/webhooks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { enqueueWebhookWork } from '../shared/queues.js';
import { delivery, webhookIdParameter } from '../shared/schemas/webhooks.js';

export const webhooksPing = endpoint({
  permission: 'webhooks:manage',
  params: { webhookId: webhookIdParameter },
  success: { status: 202, body: delivery },
  docs: {
    summary: 'Send a webhook.ping event',
    description: 'To this subscription only, as any event is sent. The answer is the delivery; follow it in the deliveries list.',
    errors: { 404: ['webhookNotFound'], 409: ['webhookInactive'] },
  },
  async handle({ principal, params }) {
    const made = await ping(principal, params.webhookId);
    // If the queue cannot take it now, the sweep finds the delivery due and queues it.
    await enqueueWebhookWork({ tenantId: principal.tenantId, deliveryId: made.id, attempt: 1 }).catch(() => undefined);
    return { body: deliveryResource(made) };
  },
});

app.http('webhooks-ping', { methods: ['POST'], route: 'webhooks/{webhookId}/ping', authLevel: 'anonymous', handler: webhooksPing });
