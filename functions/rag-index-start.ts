import { app } from '@azure/functions';
import { createJob, finishJob } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { enqueueRagWork } from '../shared/queues.js';
import { ragJob, startRagIndexBody } from '../shared/schemas/rag.js';

export const ragIndexStart = endpoint({
  permission: 'rag:run',
  body: startRagIndexBody,
  // The queue is polled at least every 2 s (host.json's maxPollingInterval): the job has seldom started sooner.
  success: { status: 202, body: ragJob, headers: ['Location'], retryAfterSeconds: 2 },
  docs: {
    summary: 'Start a RAG index rebuild',
    description:
      'Stores a job and queues it; follow `Location` to see it run. `incremental` (the default) writes only the ' +
      'chunks whose content changed, `full` rewrites them all; `projectIds` limits the rebuild to those projects and ' +
      'their tasks. One job per tenant at a time: the 409 names the active one in `activeJobId`. When the queue ' +
      'cannot take the job, it is marked Failed and the answer is a 503.',
    errors: { 409: ['ragJobActive'], 503: ['queueUnavailable'] },
  },
  async handle({ principal, body, path }) {
    const job = await createJob(principal, body);
    try {
      await enqueueRagWork({ jobId: job.jobId, tenantId: principal.tenantId });
    } catch (error) {
      // No job is ever left Queued with no message to run it.
      await finishJob(principal.tenantId, job.jobId, { error: 'The job could not be put on the queue.' });
      throw error;
    }
    return { body: job, location: `${path.replace(/\/index$/, '/jobs')}/${job.jobId}` };
  },
});

app.http('rag-index-start', { methods: ['POST'], route: 'rag/index', authLevel: 'anonymous', handler: ragIndexStart });
