import { app } from '@azure/functions';
import { listDeliveries } from '../shared/data/deliveries-repository.js';
import { getWebhook } from '../shared/data/webhooks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { delivery, listDeliveriesQuery, webhookIdParameter } from '../shared/schemas/webhooks.js';

export const webhookDeliveriesList = endpoint({
  permission: 'webhooks:manage',
  params: { webhookId: webhookIdParameter },
  query: listDeliveriesQuery,
  success: { status: 200, page: delivery },
  docs: {
    summary: "List a subscription's deliveries",
    description: 'Newest first: each event sent to the subscription, its attempts, the last answer, and when the next attempt is due.',
  },
  async handle({ principal, params, query }) {
    await getWebhook(principal.tenantId, params.webhookId);
    return { page: await listDeliveries(principal.tenantId, params.webhookId, query) };
  },
});

app.http('webhook-deliveries-list', {
  methods: ['GET'],
  route: apiRoute('webhooks/{webhookId}/deliveries'),
  authLevel: 'anonymous',
  handler: webhookDeliveriesList,
});
