import type { InvocationContext } from '@azure/functions';
import type { QueueClient, QueueServiceClient } from '@azure/storage-queue';
import type { ZodType } from 'zod';
import { queueSettings } from '../settings/read.js';
import { DependencyUnavailableError } from '../errors.js';
import { connectionCredential } from '../settings/connection-credential.js';
import { lazily } from '../lib/lazy.js';
import type { RagJobMessage } from '../schemas/rag.js';
import type { WebhookMessage } from '../schemas/webhooks.js';

/** One queue service client per process; the storage library loads only when a message is first sent. */
const queueService = lazily(async (): Promise<QueueServiceClient> => {
  const { connection } = queueSettings();
  const { QueueServiceClient } = await import('@azure/storage-queue');
  // A caller waits for this: a queue that does not answer fails fast rather than after minutes of retries.
  const options = { retryOptions: { maxTries: 2, tryTimeoutInMs: 5_000, retryDelayInMs: 200, maxRetryDelayInMs: 1_000 } };
  if ('connectionString' in connection) return QueueServiceClient.fromConnectionString(connection.connectionString, options);
  return new QueueServiceClient(connection.serviceUri, await connectionCredential(connection), options);
});

/**
 * Puts a message on a queue, base64-encoded as host.json's messageEncoding says, visible after
 * `delaySeconds`. A queue the service does not know yet (a new storage account, before the trigger's
 * host made it) is created. Any failure is the queue's: DependencyUnavailableError.
 */
async function send(queueName: string, message: object, delaySeconds = 0): Promise<void> {
  let client: QueueClient;
  try {
    client = (await queueService()).getQueueClient(queueName);
  } catch (error) {
    throw new DependencyUnavailableError('queue', error);
  }
  const text = Buffer.from(JSON.stringify(message)).toString('base64');
  const options = delaySeconds > 0 ? { visibilityTimeout: Math.ceil(delaySeconds) } : {};
  try {
    await client.sendMessage(text, options);
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode !== 404) throw new DependencyUnavailableError('queue', error);
    try {
      await client.createIfNotExists();
      await client.sendMessage(text, options);
    } catch (retryError) {
      throw new DependencyUnavailableError('queue', retryError);
    }
  }
}

/** A RAG job's work: its planning, one of its batches, or its finishing, after `delaySeconds`. */
export async function enqueueRagWork(message: RagJobMessage, delaySeconds = 0): Promise<void> {
  await send(queueSettings().ragQueueName, message, delaySeconds);
}

/** Attempts of deliveries, after `delaySeconds`. */
export async function enqueueWebhookWork(message: WebhookMessage, delaySeconds = 0): Promise<void> {
  await send(queueSettings().webhooksQueueName, message, delaySeconds);
}

/** Whether the webhooks queue has a message waiting to be handled now (not one waiting for its time); false when it cannot tell. */
export async function webhookWorkWaiting(): Promise<boolean> {
  try {
    const { peekedMessageItems } = await (await queueService()).getQueueClient(queueSettings().webhooksQueueName).peekMessages({ numberOfMessages: 1 });
    return peekedMessageItems.length > 0;
  } catch {
    return false;
  }
}

/**
 * A queue-triggered function's handler, for work that must fit `schema`. A message that does not fit
 * can never succeed: it is dropped with a warning naming `expected`, rather than retried until it
 * reaches the poison queue. Anything `handle` throws goes back to the host, which retries the message.
 */
export function queueWork<Work>(schema: ZodType<Work>, expected: string, handle: (work: Work, context: InvocationContext) => Promise<void>) {
  return async (message: unknown, context: InvocationContext): Promise<void> => {
    const parsed = schema.safeParse(message);
    if (!parsed.success) return context.warn(`Dropping a ${expected}`);
    await handle(parsed.data, context);
  };
}
