import { app } from '@azure/functions';
import { getJob } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { notModifiedOr } from '../shared/http/responses.js';
import { ragJob } from '../shared/schemas/rag.js';

export const ragJobsGet = endpoint({
  permission: 'rag:run',
  docs: {
    summary: 'Read a RAG index job',
    description: 'Queued → Running → Succeeded or Failed, with `counts` once it has run.',
    success: { status: 200, body: ragJob, headers: ['ETag'] },
    honours: ['If-None-Match'],
    errors: { 404: ['ragJobNotFound'] },
  },
  async handle({ principal, request }) {
    return notModifiedOr(request, await getJob(principal, request.params.jobId ?? ''));
  },
});

app.http('rag-jobs-get', { methods: ['GET'], route: 'rag/jobs/{jobId}', authLevel: 'anonymous', handler: ragJobsGet });
