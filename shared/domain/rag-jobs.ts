import type { EventType } from '../schemas/events.js';
import type { RagCounts, RagJob, StartRagIndexBody } from '../schemas/rag.js';
import { conflict, RuleError } from './errors.js';

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

const TERMINAL: ReadonlySet<RagJob['status']> = new Set(['Succeeded', 'Failed', 'Cancelled']);
/** A job has ended once Succeeded, Failed or Cancelled: nothing changes it after. */
export const isFinished = (job: Pick<RagJob, 'status'>) => TERMINAL.has(job.status);

/** A cancel asks a job that has not ended (`isFinished`); of one that has, it is this conflict naming how it ended. */
export const cancelOfFinished = (job: Pick<RagJob, 'status'> & { id: string }) => conflict('ragJobFinished', { id: job.id, status: job.status });

/** A start while another job of the tenant is active, naming it. */
export const activeJobConflict = (jobId: string) => new RuleError('conflict', 'ragJobActive', { id: jobId }, { activeJobId: jobId });

export type SourceKind = 'project' | 'task';

/** A place in the planning: the source kind and the query's continuation. */
export type PlanCursor = { kind: SourceKind; continuation: string | undefined };

/** Where the job's planning stands: null once every batch is planned; projects first, from the start. */
export const planningAt = (job: { planned: boolean; planCursor: PlanCursor | null }): PlanCursor | null =>
  job.planned ? null : (job.planCursor ?? { kind: 'project', continuation: undefined });

/** Whether planning still stands at `from`: else another run of the job (a message delivered twice) recorded that step first. */
export function standsAt(job: { planned: boolean; planCursor: PlanCursor | null }, from: PlanCursor): boolean {
  const at = planningAt(job);
  return at?.kind === from.kind && at.continuation === from.continuation;
}

/** Whether another queue message's run holds a job's finishing, or one of its batches, at `now`: its lease is not over. */
export const heldByOther = (hold: { runner: string; until: string } | null | undefined, runner: string, now: number) =>
  !!hold && hold.runner !== runner && Date.parse(hold.until) > now;

export type Outcome = { counts: RagCounts } | { error: string | undefined } | { cancelled: true };

/**
 * How a job ends: Succeeded with its counts, Failed with an error (without one, the last attempt's),
 * or Cancelled; and the event its end sends, if any (a cancel sends none).
 */
export function ended(
  outcome: Outcome,
  lastError: string | undefined,
  completedAt: string,
): Pick<RagJob, 'status' | 'error' | 'completedAt'> & { counts?: RagCounts } {
  if ('counts' in outcome) return { status: 'Succeeded', counts: outcome.counts, error: null, completedAt };
  if ('cancelled' in outcome) return { status: 'Cancelled', error: null, completedAt };
  const error = outcome.error ?? `Gave up after the queue's last retry.${lastError ? ` Last error: ${lastError}` : ''}`;
  return { status: 'Failed', error, completedAt };
}

export const endEvent = (status: RagJob['status']): EventType | undefined =>
  status === 'Succeeded' ? 'rag.job.succeeded' : status === 'Failed' ? 'rag.job.failed' : undefined;
