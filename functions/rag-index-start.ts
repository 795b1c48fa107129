import { app } from '@azure/functions';
import { createJob } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { ragJob, startRagIndexBody } from '../shared/schemas/rag.js';

export const ragIndexStart = endpoint({
  permission: 'rag:run',
  body: startRagIndexBody,
  honours: ['Idempotency-Key'],
  // The job reaches the RAG queue through the change feed relay, and the queue is polled at least every 250 ms (host.json's
  // maxPollingInterval): it has seldom started sooner.
  success: { status: 202, body: ragJob, headers: ['Location'], retryAfterSeconds: 2 },
  docs: {
    summary: 'Start a RAG index rebuild',
    description:
      'Stores a job, which starts as soon as it reaches the RAG queue; follow `Location` to see it run. `incremental` (the ' +
      'default) writes only the chunks whose content changed, `full` rewrites them all; `projectIds` limits the rebuild to ' +
      'those projects and their tasks. One job per tenant at a time: the 409 names the active one in `activeJobId`. With an ' +
      '`Idempotency-Key`, a retry answers the job as it was first answered (`Queued`, the same `jobId` and `Location`) and starts ' +
      'nothing; a 409 or a failure records nothing, so the same key starts a job once the tenant is free.',
    errors: { 409: ['ragJobActive'] },
  },
  async handle({ principal, body, path, idempotency }) {
    const { resource: job, replayed } = await createJob(principal.tenantId, principal.objectId, body, idempotency);
    return { body: job, location: `${path.replace(/\/index$/, '/jobs')}/${job.jobId}`, replayed };
  },
});

app.http('rag-index-start', { methods: ['POST'], route: apiRoute('rag/index'), authLevel: 'anonymous', handler: ragIndexStart });
