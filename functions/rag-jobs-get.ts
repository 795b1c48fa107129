import { app } from '@azure/functions';
import { getJob } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { notModifiedOr } from '../shared/http/responses.js';

export const ragJobsGet = endpoint({
  permission: 'rag:run',
  async handle({ principal, request }) {
    return notModifiedOr(request, await getJob(principal, request.params.jobId ?? ''));
  },
});

app.http('rag-jobs-get', { methods: ['GET'], route: 'rag/jobs/{jobId}', authLevel: 'anonymous', handler: ragJobsGet });
