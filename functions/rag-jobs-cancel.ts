import { app } from '@azure/functions';
import { requestCancel } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { jobIdParameter, ragJob } from '../shared/schemas/rag.js';

export const ragJobsCancel = endpoint({
  permission: 'rag:run',
  params: { jobId: jobIdParameter },
  success: { status: 202, body: ragJob },
  docs: {
    summary: 'Cancel a RAG index job',
    description:
      'A job not yet started ends Cancelled at once; a running one once the batches under way end (the batches not started do nothing, ' +
      'and what was written stays). The answer shows `cancelRequestedAt`. A job that has ended is a 409.',
    errors: { 409: ['ragJobFinished'] },
  },
  async handle({ principal, params }) {
    return { body: await requestCancel(principal.tenantId, params.jobId) };
  },
});

app.http('rag-jobs-cancel', { methods: ['POST'], route: apiRoute('rag/jobs/{jobId}/cancel'), authLevel: 'anonymous', handler: ragJobsCancel });
