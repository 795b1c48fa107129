import { randomUUID } from 'node:crypto';
import type { OperationInput } from '@azure/cosmos';
import type { Principal } from '../auth/principal.js';
import { ApiError, notFound } from '../errors.js';
import { ragJob, type ListRagJobsQuery, type RagCounts, type RagJob, type StartRagIndexBody } from '../schemas/rag.js';
import { sendBatch } from './batches.js';
import { cosmosStatus } from './cosmos.js';
import type { Page } from './paging.js';
import { announce, eventWrite } from './events.js';
import { asJson, batchFailure, fieldsOf, listPage, readDocument, readVisible, tenantData, type DocumentKind } from './tenant-data.js';

interface RagJobDocument extends Omit<RagJob, 'jobId'> {
  id: string;
  tenantId: string;
  type: 'ragJob';
  /** The error of the last failed attempt, kept for the job's final error if every retry fails. */
  lastError?: string;
  _etag: string;
}

/** Exists while a job of the tenant is Queued or Running: its creation is what makes a job the only active one. */
interface ActiveJobLock {
  id: typeof LOCK_ID;
  tenantId: string;
  type: 'ragActiveJob';
  jobId: string;
  _etag: string;
}

const LOCK_ID = 'rag-active-job';
const TERMINAL: ReadonlySet<RagJob['status']> = new Set(['Succeeded', 'Failed']);

const jobFields = fieldsOf(ragJob.omit({ jobId: true }));

const ragJobs: DocumentKind<RagJobDocument, RagJob> = {
  type: 'ragJob',
  // The job's id is its document's id.
  resourceOf: (document) => ({ jobId: document.id, ...jobFields(document) }),
  missing: (jobId) => notFound('ragJobNotFound', { id: jobId.slice(0, 100) }),
};

const readJobDocument = (tenantId: string, jobId: string) => readDocument<RagJobDocument>(tenantId, jobId, ragJobs.type);

function activeJobConflict(jobId: string): ApiError {
  return new ApiError(409, 'ragJobActive', { id: jobId }, { extra: { activeJobId: jobId } });
}

/**
 * Stores a Queued job, unless the tenant already has one Queued or Running (409 naming it). The
 * lock and the job are created in one batch, lock first, so two racing requests cannot both win.
 */
export async function createJob(principal: Principal, body: StartRagIndexBody): Promise<RagJob> {
  const documents = await tenantData();
  const { tenantId } = principal;
  for (let attempt = 1; attempt <= 3; attempt++) {
    const lock = await readDocument<ActiveJobLock>(tenantId, LOCK_ID, 'ragActiveJob');
    if (lock) {
      const active = await readJobDocument(tenantId, lock.jobId);
      if (active && !TERMINAL.has(active.status)) throw activeJobConflict(lock.jobId);
      // A lock left behind by a job that did finish (a crash between the two writes) is released.
      await documents
        .item(LOCK_ID, tenantId)
        .delete()
        .catch((error: unknown) => {
          if (cosmosStatus(error) !== 404) throw error;
        });
    }
    const job: Omit<RagJobDocument, '_etag'> = {
      id: randomUUID(),
      tenantId,
      type: 'ragJob',
      status: 'Queued',
      mode: body.mode,
      projectIds: body.projectIds ?? null,
      requestedAt: new Date().toISOString(),
      requestedBy: principal.objectId,
      startedAt: null,
      completedAt: null,
      counts: null,
      error: null,
    };
    const newLock: Omit<ActiveJobLock, '_etag'> = { id: LOCK_ID, tenantId, type: 'ragActiveJob', jobId: job.id };
    const result = await sendBatch(
      documents,
      [
        { operationType: 'Create', resourceBody: asJson(newLock) },
        { operationType: 'Create', resourceBody: asJson(job) },
      ],
      tenantId,
    );
    if (result[0]?.statusCode === 409) continue;
    if (result[1]?.statusCode !== 201) throw batchFailure('Storing the RAG job', result);
    return ragJobs.resourceOf(result[1].resourceBody as unknown as RagJobDocument);
  }
  const lock = await readDocument<ActiveJobLock>(tenantId, LOCK_ID, 'ragActiveJob');
  throw activeJobConflict(lock?.jobId ?? 'unknown');
}

export async function getJob(principal: Principal, jobId: string): Promise<RagJob> {
  return ragJobs.resourceOf(await readVisible(ragJobs, principal.tenantId, jobId));
}

export function listJobs(principal: Principal, query: ListRagJobsQuery): Promise<Page<RagJob>> {
  return listPage({ kind: ragJobs, tenantId: principal.tenantId, filters: {}, orderBy: 'c.requestedAt DESC', limit: query.limit, cursor: query.cursor });
}

/** The job to work on, now Running; undefined when it is gone or already finished (a repeated message). */
export async function startRunning(tenantId: string, jobId: string): Promise<RagJob | undefined> {
  const document = await readJobDocument(tenantId, jobId);
  if (!document || TERMINAL.has(document.status)) return undefined;
  const running: RagJobDocument = { ...document, status: 'Running', startedAt: document.startedAt ?? new Date().toISOString() };
  const { resource } = await (
    await tenantData()
  )
    .item(jobId, tenantId)
    .replace(asJson(running), { accessCondition: { type: 'IfMatch', condition: document._etag } });
  return ragJobs.resourceOf(resource as unknown as RagJobDocument);
}

/** Keeps the error of a failed attempt; the job stays Running while the queue retries it. */
export async function recordAttemptError(tenantId: string, jobId: string, message: string): Promise<void> {
  await (
    await tenantData()
  )
    .item(jobId, tenantId)
    .patch([{ op: 'set', path: '/lastError', value: message.slice(0, 1000) }])
    .catch((error: unknown) => {
      if (cosmosStatus(error) !== 404) throw error;
    });
}

/**
 * Ends the job (Succeeded with its counts, or Failed with an error; without one, the last attempt's)
 * and frees the tenant for the next one.
 */
export async function finishJob(tenantId: string, jobId: string, outcome: { counts: RagCounts } | { error: string | undefined }): Promise<void> {
  const documents = await tenantData();
  const document = await readJobDocument(tenantId, jobId);
  if (!document || TERMINAL.has(document.status)) return;
  const finished: RagJobDocument = {
    ...document,
    ...('counts' in outcome
      ? { status: 'Succeeded', counts: outcome.counts, error: null }
      : { status: 'Failed', error: outcome.error ?? `Gave up after the queue's last retry.${document.lastError ? ` Last error: ${document.lastError}` : ''}` }),
    completedAt: new Date().toISOString(),
  };
  const lock = await readDocument<ActiveJobLock>(tenantId, LOCK_ID, 'ragActiveJob');
  const job = ragJobs.resourceOf(finished);
  const event = eventWrite(tenantId, { type: job.status === 'Succeeded' ? 'rag.job.succeeded' : 'rag.job.failed', data: job });
  const operations: OperationInput[] = [
    { operationType: 'Replace', id: jobId, partitionKey: tenantId, resourceBody: asJson(finished), ifMatch: document._etag },
    event.operation,
  ];
  if (lock?.jobId === jobId) operations.push({ operationType: 'Delete', id: LOCK_ID, partitionKey: tenantId });
  const result = await sendBatch(documents, operations, tenantId);
  if (result[0]?.statusCode === 412) return finishJob(tenantId, jobId, outcome);
  if (result.some((operation) => operation.statusCode >= 400)) throw batchFailure(`Finishing RAG job ${jobId}`, result);
  announce(tenantId, [event.id]);
}
