/**
 * RAG index jobs, in the tenant's partition: the start of a tenant's one active job (its lock is in
 * rag-active-job.ts), its planning, its finishing and its end. Its batches are in
 * rag-batches-repository.ts; the job's counts of what it did are the sum of theirs (its `sources`
 * and `chunks`, what the tenant's index holds after it, are counted in the index), and progress is
 * counted from the batches that ended, so it never goes back.
 */
import { randomUUID } from 'node:crypto';
import type { OperationInput } from '@azure/cosmos';
import { notFound } from '../domain/errors.js';
import {
  activeJobConflict,
  cancelOfFinished,
  endEvent,
  ended,
  heldByOther,
  isFinished,
  requestedJob,
  standsAt,
  type Outcome,
  type PlanCursor,
} from '../domain/rag-jobs.js';
import { ragJob, type ListRagJobsQuery, type RagJob, type StartRagIndexBody } from '../schemas/rag.js';
import { sendBatch } from './batches.js';
import { cosmosStatus } from './cosmos.js';
import { eventWrite } from './events.js';
import { idempotentRequest, recordedResult, recordResultOperation, type Idempotency } from './idempotency.js';
import { heldLock, lockHolder, releaseLock, releaseStaleLock, takeLock } from './rag-active-job.js';
import type { ChunkPlace } from './rag-index-repository.js';
import type { Page } from './paging.js';
import {
  asJson,
  batchFailure,
  changeDocument,
  fieldsOf,
  readDocument,
  readVisible,
  tenantData,
  type Created,
  type DocumentKind,
  type StoredDocument,
} from './tenant-data.js';
import { listPage } from './tenant-queries.js';

export interface RagJobDocument extends Omit<RagJob, 'jobId'>, StoredDocument {
  type: 'ragJob';
  /** Its planning is on the RAG queue (put there by the change feed relay, after the job was stored). */
  dispatched?: true;
  /** Every batch is planned: the job ends once that many have ended. */
  planned: boolean;
  /** Where planning goes on after a restart (null: from the start, or nowhere once planned). */
  planCursor: PlanCursor | null;
  /** The queue message whose run is finishing the job, and until when: another (a message delivered twice) leaves it alone. */
  finishing?: { runner: string; until: string };
  /** The error of the last failed attempt, kept for the job's final error if every retry fails. */
  lastError?: string;
  /**
   * The final step's removals of chunks whose source is gone: how many so far, and the ones under
   * way. Recorded before they are removed, so a run that starts again after a crash counts them once.
   */
  sweep?: Sweep;
}

export interface Sweep {
  deleted: number;
  pending: ChunkPlace[];
}

const jobFields = fieldsOf(ragJob.omit({ jobId: true }));

const ragJobs: DocumentKind<RagJobDocument, RagJob> = {
  type: 'ragJob',
  // The job's id is its document's id.
  resourceOf: (document) => ({ jobId: document.id, ...jobFields(document) }),
  missing: (jobId) => notFound('ragJobNotFound', { id: jobId.slice(0, 100) }),
};

export const readJobDocument = (tenantId: string, jobId: string) => readDocument<RagJobDocument>(tenantId, jobId, ragJobs.type);

/**
 * Stores a Queued job, unless the tenant already has one Queued or Running (409 naming it). The
 * lock and the job are created in one batch, lock first, so two racing requests cannot both win.
 * With an Idempotency-Key, the job as first answered is recorded in the same batch, after the lock:
 * the same key again answers that (`replayed`), whatever the job has become since, and creates
 * nothing; a request refused (409, or the database failing) records nothing, so its retry with the
 * same key starts a job once the tenant is free.
 */
export async function createJob(tenantId: string, actor: string, body: StartRagIndexBody, idempotency: Idempotency | undefined): Promise<Created<RagJob>> {
  const documents = await tenantData();
  const idempotent = idempotency && idempotentRequest(idempotency, actor, body);
  // The first answer to the key, if there is one. Asked again before any 409: the active job may be
  // the key's own, started by a racing request with the same key since the last look.
  const replay = async (): Promise<Created<RagJob> | undefined> => {
    const recorded = idempotent && (await recordedResult<RagJob>(documents, tenantId, idempotent));
    return recorded ? { resource: recorded, replayed: true } : undefined;
  };
  for (let attempt = 1; attempt <= 3; attempt++) {
    const replayed = await replay();
    if (replayed) return replayed;
    const lock = await heldLock(tenantId);
    if (lock) {
      const active = await readJobDocument(tenantId, lock.jobId);
      if (active && !isFinished(active)) {
        const replayedMeanwhile = await replay();
        if (replayedMeanwhile) return replayedMeanwhile;
        throw activeJobConflict(lock.jobId);
      }
      // Let go as read: the job may have ended, freeing the lock, and the next start taken it since.
      await releaseStaleLock(tenantId, lock);
    }
    const job: Omit<RagJobDocument, '_etag'> = {
      id: randomUUID(),
      tenantId,
      type: 'ragJob',
      ...requestedJob(body, actor, new Date().toISOString()),
      planned: false,
      planCursor: null,
    };
    const resource = ragJobs.resourceOf(job as RagJobDocument);
    const record = idempotent && recordResultOperation(tenantId, idempotent, resource);
    const operations: OperationInput[] = [takeLock(tenantId, job.id), ...(record ? [record] : []), { operationType: 'Create', resourceBody: asJson(job) }];
    const result = await sendBatch(documents, operations, tenantId);
    // The lock taken by another job, or the key's record by a racing request with the same key: look again.
    if (result[0]?.statusCode === 409 || (record && result[1]?.statusCode === 409)) continue;
    if (result.at(-1)?.statusCode !== 201) throw batchFailure('Storing the RAG job', result);
    return { resource, replayed: false };
  }
  const replayed = await replay();
  if (replayed) return replayed;
  throw activeJobConflict((await lockHolder(tenantId)) ?? 'unknown');
}

export async function getJob(tenantId: string, jobId: string): Promise<RagJob> {
  return ragJobs.resourceOf(await readVisible(ragJobs, tenantId, jobId));
}

export function listJobs(tenantId: string, query: ListRagJobsQuery): Promise<Page<RagJob>> {
  return listPage(ragJobs, tenantId, query, { orderBy: 'c.requestedAt DESC' });
}

/** Changes a job that has not ended; undefined when it has (or is gone). */
async function changeJob(tenantId: string, jobId: string, change: (current: RagJobDocument) => RagJobDocument): Promise<RagJobDocument | undefined> {
  const current = await readJobDocument(tenantId, jobId);
  if (!current || isFinished(current)) return undefined;
  let ended = false;
  const changed = await changeDocument({
    kind: ragJobs,
    tenantId,
    id: jobId,
    expected: undefined,
    change(latest) {
      if (!isFinished(latest)) return change(latest);
      ended = true;
      return latest;
    },
  });
  return ended ? undefined : changed;
}

/** The job's planning is on the queue: the relay leaves it alone from now on. */
export function markDispatched(tenantId: string, jobId: string): Promise<RagJobDocument | undefined> {
  return changeJob(tenantId, jobId, (current) => ({ ...current, dispatched: true }));
}

/** The job to plan, now Running; undefined when it is gone or has ended (a repeated message). */
export function startRunning(tenantId: string, jobId: string): Promise<RagJobDocument | undefined> {
  return changeJob(tenantId, jobId, (current) => ({
    ...current,
    status: 'Running',
    startedAt: current.startedAt ?? new Date().toISOString(),
    progress: current.progress ?? { sources: 0, batches: 0, batchesDone: 0 },
  }));
}

/**
 * Planning went from `from` to `to` (null: every batch is planned), adding these sources and batches.
 * Undefined when the job ended, or when its planning no longer stands at `from`: another run of it (a
 * message delivered twice) recorded that step first, and this run leaves the rest to that one.
 */
export async function recordPlanning(
  tenantId: string,
  jobId: string,
  step: { from: PlanCursor; to: PlanCursor | null; sources: number; batches: number },
): Promise<RagJobDocument | undefined> {
  let movedOn = false;
  const job = await changeJob(tenantId, jobId, (current) => {
    movedOn = !standsAt(current, step.from);
    if (movedOn) return current;
    const progress = current.progress ?? { sources: 0, batches: 0, batchesDone: 0 };
    return {
      ...current,
      planned: step.to === null,
      planCursor: step.to,
      progress: { ...progress, sources: progress.sources + step.sources, batches: progress.batches + step.batches },
    };
  });
  return movedOn ? undefined : job;
}

/**
 * Takes the job's finishing for the run of queue message `runner`, for `leaseMs`: undefined when the
 * job has ended or another message's run holds it. A run that failed or crashed has its message
 * delivered again, and that message takes the finishing back at once; any other waits out the lease.
 */
export async function startFinishing(tenantId: string, jobId: string, runner: string, leaseMs: number): Promise<RagJobDocument | undefined> {
  let taken = false;
  const job = await changeJob(tenantId, jobId, (current) => {
    taken = !heldByOther(current.finishing, runner, Date.now());
    return taken ? { ...current, finishing: { runner, until: new Date(Date.now() + leaseMs).toISOString() } } : current;
  });
  return taken ? job : undefined;
}

/** How far the final step's removals have come; the finishing run keeps the job for another `leaseMs`. */
export function recordSweep(tenantId: string, jobId: string, sweep: Sweep, leaseMs: number): Promise<RagJobDocument | undefined> {
  return changeJob(tenantId, jobId, (current) => ({
    ...current,
    sweep,
    ...(current.finishing ? { finishing: { ...current.finishing, until: new Date(Date.now() + leaseMs).toISOString() } } : {}),
  }));
}

/** Every batch is planned. */
export function finishPlanning(tenantId: string, jobId: string): Promise<RagJobDocument | undefined> {
  return changeJob(tenantId, jobId, (current) => ({ ...current, planned: true, planCursor: null }));
}

/** Progress after `batchesDone` batches ended, never less than it already shows. */
export function recordBatchesDone(tenantId: string, jobId: string, batchesDone: number): Promise<RagJobDocument | undefined> {
  return changeJob(tenantId, jobId, (current) => ({
    ...current,
    progress: { sources: 0, batches: 0, ...current.progress, batchesDone: Math.max(current.progress?.batchesDone ?? 0, batchesDone) },
  }));
}

/**
 * Asks a job to stop: one not yet planned ends Cancelled at once; a running one ends Cancelled once
 * the batches under way end (those not started do nothing). A job that has ended is a 409.
 */
export async function requestCancel(tenantId: string, jobId: string): Promise<RagJob> {
  const current = await readVisible(ragJobs, tenantId, jobId);
  if (isFinished(current)) throw cancelOfFinished(current);
  const asked = await changeJob(tenantId, jobId, (latest) => ({ ...latest, cancelRequestedAt: latest.cancelRequestedAt ?? new Date().toISOString() }));
  if (!asked) throw cancelOfFinished(await readVisible(ragJobs, tenantId, jobId));
  if (asked.status === 'Queued') await finishJob(tenantId, jobId, { cancelled: true });
  return ragJobs.resourceOf((await readJobDocument(tenantId, jobId)) ?? asked);
}

/** Keeps the error of a failed attempt; the job stays Running while the queue retries it. */
export async function recordAttemptError(tenantId: string, jobId: string, message: string): Promise<void> {
  const documents = await tenantData();
  await documents
    .item(jobId, tenantId)
    .patch([{ op: 'set', path: '/lastError', value: message.slice(0, 1000) }])
    .catch((error: unknown) => {
      if (cosmosStatus(error) !== 404) throw error;
    });
}

/** Ends the job as its outcome says (`ended`), sends its event if it has one, and frees the tenant for the next job. */
export async function finishJob(tenantId: string, jobId: string, outcome: Outcome): Promise<void> {
  const documents = await tenantData();
  const document = await readJobDocument(tenantId, jobId);
  if (!document || isFinished(document)) return;
  const finished: RagJobDocument = { ...document, ...ended(outcome, document.lastError, new Date().toISOString()) };
  const holder = await lockHolder(tenantId);
  const job = ragJobs.resourceOf(finished);
  const type = endEvent(job.status);
  const event = type && eventWrite(tenantId, { type, data: job });
  const operations: OperationInput[] = [
    { operationType: 'Replace', id: jobId, partitionKey: tenantId, resourceBody: asJson(finished), ifMatch: document._etag },
    ...(event ? [event] : []),
  ];
  if (holder === jobId) operations.push(releaseLock(tenantId));
  const result = await sendBatch(documents, operations, tenantId);
  if (result[0]?.statusCode === 412) return finishJob(tenantId, jobId, outcome);
  if (result.some((operation) => operation.statusCode >= 400)) throw batchFailure(`Finishing RAG job ${jobId}`, result);
}
