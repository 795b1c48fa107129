import { app } from '@azure/functions';
import { z } from 'zod';
import { listJobs } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { json, nextPageLink } from '../shared/http/responses.js';
import { listRagJobsQuery, ragJob } from '../shared/schemas/rag.js';

export const ragJobsList = endpoint({
  permission: 'rag:run',
  query: listRagJobsQuery,
  docs: {
    summary: 'List RAG index jobs',
    description: 'Newest first.',
    success: { status: 200, body: z.array(ragJob), headers: ['Link'] },
  },
  async handle({ principal, query, request }) {
    const page = await listJobs(principal, query);
    return json(200, page.items, nextPageLink(request.url, page.nextCursor));
  },
});

app.http('rag-jobs-list', { methods: ['GET'], route: 'rag/jobs', authLevel: 'anonymous', handler: ragJobsList });
