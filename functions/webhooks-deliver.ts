import { app, type InvocationContext } from '@azure/functions';
import { webhookMessage } from '../shared/schemas/webhooks.js';
import { attempt } from '../shared/webhooks/deliveries.js';

/**
 * The webhooks queue's work: a delivery's next attempt, which waited there for its time in the retry
 * schedule. A receiver's failure is not this function's: it is recorded and retried on schedule. A
 * failure of ours (the database) is thrown back to the host, which retries the message.
 */
export async function webhooksDeliver(message: unknown, context: InvocationContext): Promise<void> {
  const parsed = webhookMessage.safeParse(message);
  if (!parsed.success) {
    // It can never succeed; retrying it would only delay the poison queue.
    context.warn('Dropping a webhooks queue message that is not a delivery attempt');
    return;
  }
  await attempt(parsed.data.tenantId, parsed.data.deliveryId, parsed.data.attempt);
}

app.storageQueue('webhooks-deliver', { queueName: '%WEBHOOKS_QUEUE_NAME%', connection: 'AzureWebJobsStorage', handler: webhooksDeliver });
