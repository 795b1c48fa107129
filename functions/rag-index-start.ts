import { app } from '@azure/functions';
import { createJob, finishJob } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { json } from '../shared/http/responses.js';
import { enqueueRagJob } from '../shared/rag/queue.js';
import { startRagIndexBody } from '../shared/schemas/rag.js';

export const ragIndexStart = endpoint({
  permission: 'rag:run',
  body: startRagIndexBody,
  async handle({ principal, body, request }) {
    const job = await createJob(principal, body);
    try {
      await enqueueRagJob({ jobId: job.jobId, tenantId: principal.tenantId });
    } catch (error) {
      // No job is ever left Queued with no message to run it.
      await finishJob(principal.tenantId, job.jobId, { error: 'The job could not be put on the queue.' });
      throw error;
    }
    const jobsPath = new URL(request.url).pathname.replace(/\/index$/, '/jobs');
    return json(202, job, { Location: `${jobsPath}/${job.jobId}` });
  },
});

app.http('rag-index-start', { methods: ['POST'], route: 'rag/index', authLevel: 'anonymous', handler: ragIndexStart });
