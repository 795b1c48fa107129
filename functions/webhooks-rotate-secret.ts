import { app } from '@azure/functions';
import { rotateSecret } from '../shared/data/webhooks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { webhookIdParameter, webhook, webhookWithSecret } from '../shared/schemas/webhooks.js';
import { newSecret } from '../shared/webhooks/signing.js';

export const webhooksRotateSecret = endpoint({
  permission: 'webhooks:manage',
  params: { webhookId: webhookIdParameter },
  success: { status: 200, body: webhookWithSecret, versionOf: webhook },
  docs: {
    summary: "Rotate a subscription's secret",
    description:
      'Answers the new secret, once. Every secret it replaces keeps signing for 24 hours: each delivery carries one signature per secret ' +
      'still signing, so that receivers can switch over at their own pace, however many rotations happen meanwhile. Concurrent rotations lose no secret.',
    errors: { 409: ['tooManySigningSecrets'] },
  },
  async handle({ principal, params }) {
    return { body: await rotateSecret(principal.tenantId, params.webhookId, newSecret()) };
  },
});

app.http('webhooks-rotate-secret', {
  methods: ['POST'],
  route: apiRoute('webhooks/{webhookId}/rotate-secret'),
  authLevel: 'anonymous',
  handler: webhooksRotateSecret,
});
