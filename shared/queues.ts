import type { QueueClient } from '@azure/storage-queue';
import { queueSettings } from '../config.js';
import { DependencyUnavailableError } from '../errors.js';
import { lazily } from '../lazy.js';
import type { RagJobMessage } from '../schemas/rag.js';

/** One queue client per process; the storage library loads only when a rebuild is first requested. */
const ragQueue = lazily(async (): Promise<QueueClient> => {
  const { connection, ragQueueName } = queueSettings();
  const { QueueServiceClient } = await import('@azure/storage-queue');
  // A caller waits for this: a queue that does not answer fails fast rather than after minutes of retries.
  const options = { retryOptions: { maxTries: 2, tryTimeoutInMs: 5_000, retryDelayInMs: 200, maxRetryDelayInMs: 1_000 } };
  if ('connectionString' in connection) return QueueServiceClient.fromConnectionString(connection.connectionString, options).getQueueClient(ragQueueName);
  const { DefaultAzureCredential } = await import('@azure/identity');
  return new QueueServiceClient(connection.serviceUri, new DefaultAzureCredential(), options).getQueueClient(ragQueueName);
});

/** Puts a job's message on the queue, base64-encoded as host.json's messageEncoding says. */
export async function enqueueRagJob(message: RagJobMessage): Promise<void> {
  const client = await ragQueue();
  const text = Buffer.from(JSON.stringify(message)).toString('base64');
  try {
    await client.sendMessage(text);
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) {
      // A new storage account has no queue until the trigger's host creates it.
      try {
        await client.createIfNotExists();
        await client.sendMessage(text);
        return;
      } catch (retryError) {
        throw new DependencyUnavailableError('queue', retryError);
      }
    }
    throw new DependencyUnavailableError('queue', error);
  }
}
