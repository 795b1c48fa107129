import type { RagJob, StartRagIndexBody } from '../schemas/rag.js';

/** A job as it is requested: Queued, with nothing started, counted or failed yet. */
export function requestedJob(request: StartRagIndexBody, requestedBy: string, requestedAt: string): Omit<RagJob, 'jobId'> {
  return {
    status: 'Queued',
    mode: request.mode,
    projectIds: request.projectIds ?? null,
    requestedAt,
    requestedBy,
    startedAt: null,
    completedAt: null,
    progress: null,
    cancelRequestedAt: null,
    counts: null,
    error: null,
  };
}
