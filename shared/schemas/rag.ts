import { z } from 'zod';
import { patterned } from './validation.js';
import { listedWithETag, pagingParameters, type PathParameter, timestamp } from './common.js';
import { projectId } from './projects.js';

export const RAG_MODES = ['incremental', 'full'] as const;
export const RAG_JOB_STATUSES = ['Queued', 'Running', 'Succeeded', 'Failed', 'Cancelled'] as const;
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
  sources: z.number().int().describe("Projects and tasks the tenant's whole index holds after the job, whatever its scope"),
  chunks: z.number().int().describe("Chunks the tenant's whole index holds after the job, whatever its scope"),
  written: z.number().int().describe('Chunks written by the job, in its scope'),
  unchanged: z.number().int().describe('Chunks of its scope left as they were'),
  deleted: z.number().int().describe('Chunks removed because their source is gone'),
});
export type RagCounts = z.infer<typeof ragCounts>;

/** A job id is a UUID as `randomUUID()` writes it (lower case). */
/** A GUID as `randomUUID()` writes it: lower-case hex in 8-4-4-4-12 groups. */
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const jobId = patterned(GUID, 'idForm', { example: '5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b' }).meta({ format: 'uuid' });
export const jobIdParameter: PathParameter = { schema: jobId, notFound: 'ragJobNotFound', example: '5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b' };

export const ragProgress = z.object({
  sources: z.number().int().describe('Projects and tasks found in scope so far'),
  batches: z.number().int().describe('Batches planned so far (at most 500 sources each)'),
  batchesDone: z.number().int().describe('Batches that have ended'),
});
export type RagProgress = z.infer<typeof ragProgress>;

export const ragJob = z.object({
  jobId,
  status: z.enum(RAG_JOB_STATUSES),
  mode: z.enum(RAG_MODES),
  projectIds: z.array(projectId).nullable(),
  requestedAt: timestamp,
  requestedBy: z.string().describe("The requester's Entra object id (oid)"),
  startedAt: timestamp.nullable(),
  completedAt: timestamp.nullable(),
  progress: ragProgress.nullable().describe('While Running: how far the job has come; afterwards, how it ended'),
  cancelRequestedAt: timestamp.nullable().describe('When a cancel was asked for; the job is Cancelled once the batches under way end'),
  counts: ragCounts.nullable(),
  error: z.string().nullable(),
});
export type RagJob = z.infer<typeof ragJob>;

/** A RAG job as a list shows it: with `etag`, the ETag a read of it answers. */
export const ragJobListItem = listedWithETag(ragJob);

export const listRagJobsQuery = z.strictObject({ ...pagingParameters });
export type ListRagJobsQuery = z.infer<typeof listRagJobsQuery>;

/** The RAG queue's work: plan a job, run one of its batches, or finish it once every batch has ended. */
export const ragJobMessage = z.union([
  z.strictObject({ jobId, tenantId: z.string().min(1) }),
  z.strictObject({ jobId, tenantId: z.string().min(1), batch: z.number().int().min(0) }),
  z.strictObject({ jobId, tenantId: z.string().min(1), finish: z.literal(true) }),
]);
export type RagJobMessage = z.infer<typeof ragJobMessage>;
