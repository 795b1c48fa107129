import { z } from 'zod';
import { GUID } from '../guid.js';
import { pagingParameters, timestamp, type PathParameter } from './common.js';
import { projectId } from './projects.js';

export const RAG_MODES = ['incremental', 'full'] as const;
export const RAG_JOB_STATUSES = ['Queued', 'Running', 'Succeeded', 'Failed'] as const;
export type RagJobStatus = (typeof RAG_JOB_STATUSES)[number];
export const MAX_PROJECT_IDS = 100;

export const startRagIndexBody = z.strictObject({
  mode: z.enum(RAG_MODES).default('incremental'),
  /** Limits the rebuild to these projects and their tasks; absent means the whole tenant. */
  projectIds: z
    .array(projectId)
    .min(1)
    .max(MAX_PROJECT_IDS)
    .transform((ids) => [...new Set(ids)])
    .optional(),
});
export type StartRagIndexBody = z.infer<typeof startRagIndexBody>;

export const ragCounts = z.object({
  sources: z.number().int().describe('Projects and tasks the index holds after the job'),
  chunks: z.number().int().describe('Chunks the index holds after the job'),
  written: z.number().int().describe('Chunks written by the job'),
  unchanged: z.number().int().describe('Chunks left as they were'),
  deleted: z.number().int().describe('Chunks removed because their source is gone'),
});
export type RagCounts = z.infer<typeof ragCounts>;

/** A job id is a UUID as `randomUUID()` writes it (lower case). */
export const jobId = z.string().regex(GUID).meta({ format: 'uuid' });
export const jobIdParameter: PathParameter = { schema: jobId, notFound: 'ragJobNotFound', example: '5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b' };

export const ragJob = z.object({
  jobId,
  status: z.enum(RAG_JOB_STATUSES),
  mode: z.enum(RAG_MODES),
  projectIds: z.array(projectId).nullable(),
  requestedAt: timestamp,
  requestedBy: z.string().describe("The requester's Entra object id (oid)"),
  startedAt: timestamp.nullable(),
  completedAt: timestamp.nullable(),
  counts: ragCounts.nullable(),
  error: z.string().nullable(),
});
export type RagJob = z.infer<typeof ragJob>;

export const listRagJobsQuery = z.strictObject({ ...pagingParameters });
export type ListRagJobsQuery = z.infer<typeof listRagJobsQuery>;

/** What the queue carries: just enough to find the job. */
export const ragJobMessage = z.object({ jobId, tenantId: z.string().min(1) });
export type RagJobMessage = z.infer<typeof ragJobMessage>;
