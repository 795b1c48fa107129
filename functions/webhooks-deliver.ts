import { app, type InvocationContext } from '@azure/functions';
import { webhookMessage } from '../shared/schemas/webhooks.js';
import { attempt, handOverEvent } from '../shared/webhooks/deliveries.js';

/**
 * The webhooks queue's work: hand an event over to its subscriptions, or make one attempt of one
 * delivery. A receiver's failure is not this function's: it is recorded and retried on schedule.
 * A failure of ours (the database) is thrown back to the host, which retries the message.
 */
export async function webhooksDeliver(message: unknown, context: InvocationContext): Promise<void> {
  const parsed = webhookMessage.safeParse(message);
  if (!parsed.success) {
    // It can never succeed; retrying it would only delay the poison queue.
    context.warn('Dropping a webhooks queue message that is neither an event nor a delivery attempt');
    return;
  }
  const work = parsed.data;
  if ('eventId' in work) await handOverEvent(work.tenantId, work.eventId);
  else await attempt(work.tenantId, work.deliveryId, work.attempt);
}

app.storageQueue('webhooks-deliver', { queueName: '%WEBHOOKS_QUEUE_NAME%', connection: 'AzureWebJobsStorage', handler: webhooksDeliver });
