import { app } from '@azure/functions';
import { listWebhooks } from '../shared/data/webhooks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { listWebhooksQuery, webhookListItem } from '../shared/schemas/webhooks.js';

export const webhooksList = endpoint({
  permission: 'webhooks:manage',
  query: listWebhooksQuery,
  success: { status: 200, page: webhookListItem },
  docs: { summary: 'List webhook subscriptions', description: 'Newest first. Secrets are never shown here.' },
  async handle({ principal, query }) {
    return { page: await listWebhooks(principal.tenantId, query) };
  },
});

app.http('webhooks-list', { methods: ['GET'], route: apiRoute('webhooks'), authLevel: 'anonymous', handler: webhooksList });
