import { app, type InvocationContext } from '@azure/functions';
import { finishJob, recordAttemptError, startRunning } from '../shared/data/rag-jobs-repository.js';
import { rebuildIndex } from '../shared/rag/rebuild.js';
import { ragJobMessage } from '../shared/schemas/rag.js';

/**
 * Runs a RAG index rebuild from its queue message. A failure is thrown back to the Functions host,
 * which retries the message after host.json's visibilityTimeout and, after maxDequeueCount tries,
 * moves it to the poison queue (see rag-index-poison). A message for a finished job does nothing.
 */
export async function ragIndexWorker(message: unknown, context: InvocationContext): Promise<void> {
  const parsed = ragJobMessage.safeParse(message);
  if (!parsed.success) {
    // It can never succeed; retrying it would only delay the poison queue.
    context.warn('Dropping a RAG queue message that is not { jobId, tenantId }');
    return;
  }
  const { jobId, tenantId } = parsed.data;
  const job = await startRunning(tenantId, jobId);
  if (!job) {
    context.log(`RAG job ${jobId} is already finished or gone; nothing to do`);
    return;
  }
  try {
    const counts = await rebuildIndex(tenantId, job);
    await finishJob(tenantId, jobId, { counts });
    context.log(`RAG job ${jobId} succeeded: ${JSON.stringify(counts)}`);
  } catch (error) {
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    await recordAttemptError(tenantId, jobId, reason);
    throw error;
  }
}

app.storageQueue('rag-index-worker', { queueName: '%RAG_QUEUE_NAME%', connection: 'AzureWebJobsStorage', handler: ragIndexWorker });
