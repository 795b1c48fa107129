import { app } from '@azure/functions';
import { queueWork } from '../shared/background/queues.js';
import { webhookMessage } from '../shared/schemas/webhooks.js';
import { attempt } from '../shared/background/webhooks-queue.js';

/**
 * The webhooks queue's work: a delivery's next attempt, put there by the change feed relay when it
 * fell due or by the attempt before it to wait for its time in the retry schedule. A receiver's
 * failure is not this function's: it is recorded and retried on schedule. A failure of ours (the
 * database, the queue) is thrown back to the host, which retries the message.
 */
export const webhooksDeliver = queueWork(webhookMessage, 'webhooks queue message that is not a delivery attempt', attempt);

app.storageQueue('webhooks-deliver', { queueName: '%WEBHOOKS_QUEUE_NAME%', connection: 'AzureWebJobsStorage', handler: webhooksDeliver });
