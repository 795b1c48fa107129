import { app } from '@azure/functions';
import { listJobs } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { listRagJobsQuery, ragJobListItem } from '../shared/schemas/rag.js';

export const ragJobsList = endpoint({
  permission: 'rag:run',
  query: listRagJobsQuery,
  success: { status: 200, page: ragJobListItem },
  docs: { summary: 'List RAG index jobs', description: 'Newest first.' },
  async handle({ principal, query }) {
    return { page: await listJobs(principal.tenantId, query) };
  },
});

app.http('rag-jobs-list', { methods: ['GET'], route: apiRoute('rag/jobs'), authLevel: 'anonymous', handler: ragJobsList });
