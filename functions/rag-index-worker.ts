import { app, type InvocationContext } from '@azure/functions';
import { recordBatchError } from '../shared/data/rag-batches-repository.js';
import { recordAttemptError } from '../shared/data/rag-jobs-repository.js';
import { finish, plan, runBatch } from '../shared/background/rag-queue.js';
import { queueWork } from '../shared/background/queues.js';
import { ragJobMessage } from '../shared/schemas/rag.js';

/** The queue message's id, the same at every delivery of it. */
function queueMessageId(context: InvocationContext): string {
  const id = context.triggerMetadata?.id;
  return typeof id === 'string' ? id : context.invocationId;
}

/**
 * Runs a RAG index job's work from the queue: its planning, one of its batches, or its finishing
 * (shared/background/rag-queue.ts). A failure is thrown back to the Functions host, which retries the message
 * after host.json's visibilityTimeout and, after maxDequeueCount tries, moves it to the poison queue
 * (see rag-index-poison). Work for a job that has ended does nothing.
 */
export const ragIndexWorker = queueWork(ragJobMessage, 'RAG queue message that is not a job, a batch or a finishing', async (work, context) => {
  try {
    if ('batch' in work) await runBatch(work.tenantId, work.jobId, work.batch, context.invocationId);
    else if ('finish' in work) await finish(work.tenantId, work.jobId, queueMessageId(context));
    else await plan(work.tenantId, work.jobId);
  } catch (error) {
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if ('batch' in work) await recordBatchError(work.tenantId, work.jobId, work.batch, reason);
    else await recordAttemptError(work.tenantId, work.jobId, reason);
    throw error;
  }
});

app.storageQueue('rag-index-worker', { queueName: '%RAG_QUEUE_NAME%', connection: 'AzureWebJobsStorage', handler: ragIndexWorker });
