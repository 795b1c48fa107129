import { app } from '@azure/functions';
import { z } from 'zod';
import { listJobs } from '../shared/data/rag-jobs-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { listRagJobsQuery, ragJob } from '../shared/schemas/rag.js';

export const ragJobsList = endpoint({
  permission: 'rag:run',
  query: listRagJobsQuery,
  success: { status: 200, body: z.array(ragJob), headers: ['Link'] },
  docs: { summary: 'List RAG index jobs', description: 'Newest first.' },
  async handle({ principal, query }) {
    const { items, nextCursor } = await listJobs(principal, query);
    return { body: items, nextCursor };
  },
});

app.http('rag-jobs-list', { methods: ['GET'], route: 'rag/jobs', authLevel: 'anonymous', handler: ragJobsList });
