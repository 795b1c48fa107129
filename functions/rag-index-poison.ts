import { app } from '@azure/functions';
import { readBatch } from '../shared/data/rag-batches-repository.js';
import { finishJob } from '../shared/data/rag-jobs-repository.js';
import { queueWork } from '../shared/background/queues.js';
import { ragJobMessage } from '../shared/schemas/rag.js';

/**
 * Work that used up its retries fails its job, with the last error: a batch's names the batch. The
 * batches already written stay in the index, each chunk as it was or as it is now.
 */
export const ragIndexPoison = queueWork(ragJobMessage, 'poisoned RAG queue message that is not a job, a batch or a finishing', async (work, context) => {
  let error: string | undefined;
  if ('batch' in work) {
    const batch = await readBatch(work.tenantId, work.jobId, work.batch);
    const sources = batch?.sourceIds.length ?? 0;
    const lastError = batch?.lastError ? ` Last error: ${batch.lastError}` : '';
    error = `Batch ${work.batch} (${sources} ${batch?.kind ?? 'source'}${sources === 1 ? '' : 's'}) failed after every retry.${lastError}`;
  }
  await finishJob(work.tenantId, work.jobId, { error });
  context.warn(`RAG job ${work.jobId} failed: ${'batch' in work ? `its batch ${work.batch}` : 'its work'} used up every retry`);
});

app.storageQueue('rag-index-poison', { queueName: '%RAG_QUEUE_NAME%-poison', connection: 'AzureWebJobsStorage', handler: ragIndexPoison });
