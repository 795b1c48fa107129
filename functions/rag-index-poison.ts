import { app, type InvocationContext } from '@azure/functions';
import { finishJob } from '../shared/data/rag-jobs-repository.js';
import { ragJobMessage } from '../shared/schemas/rag.js';

/** A job whose message used up its retries ends Failed, with the error of its last attempt. */
export async function ragIndexPoison(message: unknown, context: InvocationContext): Promise<void> {
  const parsed = ragJobMessage.safeParse(message);
  if (!parsed.success) {
    context.warn('Dropping a poisoned RAG queue message that is not { jobId, tenantId }');
    return;
  }
  await finishJob(parsed.data.tenantId, parsed.data.jobId, { error: undefined });
  context.warn(`RAG job ${parsed.data.jobId} failed: its message used up every retry`);
}

app.storageQueue('rag-index-poison', { queueName: '%RAG_QUEUE_NAME%-poison', connection: 'AzureWebJobsStorage', handler: ragIndexPoison });
