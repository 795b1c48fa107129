import { app } from '@azure/functions';
import { getJob } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { jobIdParameter, ragJob } from '../shared/schemas/rag.js';

export const ragJobsGet = endpoint({
  permission: 'rag:run',
  params: { jobId: jobIdParameter },
  honours: ['If-None-Match'],
  success: { status: 200, body: ragJob },
  docs: {
    summary: 'Read a RAG index job',
    description: 'Queued → Running → Succeeded or Failed, with `counts` once it has run.',
  },
  async handle({ principal, params }) {
    return { body: await getJob(principal.tenantId, params.jobId) };
  },
});

app.http('rag-jobs-get', { methods: ['GET'], route: apiRoute('rag/jobs/{jobId}'), authLevel: 'anonymous', handler: ragJobsGet });
