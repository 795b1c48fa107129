/**
 * The RAG index jobs' store (shared/data/rag-jobs-repository.ts), in process, against the embedded
 * Cosmos store of the local stack started by this file: the one active job of a tenant, also when
 * starts race, its planning, finishing, cancel and end, and its listing. The app reaches the store
 * through a proxy (test/support/cosmos-proxy.ts) that can fail a request or hold it while another
 * writer gets there first; the test reads and writes the store directly, as another instance would.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../../shared/auth/principal.js';
import type { EventDocument } from '../../../shared/data/events.js';
import type { Idempotency } from '../../../shared/data/idempotency.js';
import {
  createJob as startJob,
  finishJob,
  finishPlanning,
  getJob,
  listJobs,
  markDispatched,
  recordAttemptError,
  recordBatchesDone,
  recordPlanning,
  recordSweep,
  requestCancel,
  startFinishing,
  startRunning,
  type RagJobDocument,
  type Sweep,
} from '../../../shared/data/rag-jobs-repository.js';
import type { StartRagIndexBody } from '../../../shared/schemas/rag.js';
import { errorOf, failureOf } from '../../support/failures.js';
import { beforeRequest, type CosmosRequestRecord, isBatch, STORE_FAILURE, writesIn } from '../../support/cosmos-proxy.js';
import { documentsOf, embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';

const embedded = embeddedStoreForTests();

const LOCK_ID = 'rag-active-job';
const isLockRead = (record: CosmosRequestRecord) => record.method === 'GET' && record.path.endsWith(`/docs/${LOCK_ID}`);

async function stored<T = RagJobDocument>(tenantId: string, id: string): Promise<T | undefined> {
  const { resource } = await embedded.direct().item(id, tenantId).read<T & object>();
  return resource;
}

const storedLock = (tenantId: string) => stored<{ jobId: string }>(tenantId, LOCK_ID);

const eventsOf = (tenantId: string) => documentsOf<EventDocument>(embedded.direct(), tenantId, 'event');

/** Sets fields of the stored job as another instance would, past the proxy. */
async function storeFields(tenantId: string, jobId: string, fields: Partial<RagJobDocument>): Promise<void> {
  const current = (await stored(tenantId, jobId))!;
  await embedded
    .direct()
    .item(jobId, tenantId)
    .replace({ ...current, ...fields });
}

/** Starts a job without an Idempotency-Key: the job as answered. */
const createJob = async (principal: Principal, body: StartRagIndexBody) => (await startJob(principal.tenantId, principal.objectId, body, undefined)).resource;

const activeJobConflict = (jobId: string) => ({ refusal: 'conflict', messageKey: 'ragJobActive', params: { id: jobId }, extra: { activeJobId: jobId } });

/** A job of a new tenant stored as ended (`status`) while the tenant's lock still names it: a lock left behind. */
async function endedJobStillLocking(status: RagJobDocument['status']) {
  const principal = adminCaller();
  const ended = await createJob(principal, { mode: 'incremental' });
  await storeFields(principal.tenantId, ended.jobId, { status });
  return { principal, ended };
}

/** A job of a new tenant, Running with its batches planned (progress as given). */
async function runningJob(principal: Principal = adminCaller()) {
  const job = await createJob(principal, { mode: 'incremental' });
  await startRunning(principal.tenantId, job.jobId);
  return { principal, tenantId: principal.tenantId, jobId: job.jobId };
}

describe('starting a job', () => {
  it('stores it Queued, not planned, with what was asked, and shows it as its readers see it', async () => {
    const principal = adminCaller();
    const before = Date.now();
    const job = await createJob(principal, { mode: 'full', projectIds: ['PRJ-1'] });
    expect(job).toEqual({
      jobId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'Queued',
      mode: 'full',
      projectIds: ['PRJ-1'],
      requestedAt: expect.any(String),
      requestedBy: principal.objectId,
      startedAt: null,
      completedAt: null,
      progress: null,
      cancelRequestedAt: null,
      counts: null,
      error: null,
    });
    expect(Date.parse(job.requestedAt)).toBeGreaterThanOrEqual(before);
    const document = await stored(principal.tenantId, job.jobId);
    expect(document).toMatchObject({ id: job.jobId, tenantId: principal.tenantId, type: 'ragJob', status: 'Queued', planned: false, planCursor: null });
    expect(await storedLock(principal.tenantId)).toMatchObject({ type: 'ragActiveJob', jobId: job.jobId });
    expect(await getJob(principal.tenantId, job.jobId)).toEqual(job);
  });

  it('while one is Queued or Running is a 409 naming the active job, and stores nothing', async () => {
    const principal = adminCaller();
    const first = await createJob(principal, { mode: 'incremental' });
    expect(await failureOf(createJob(principal, { mode: 'full' }))).toMatchObject(activeJobConflict(first.jobId));
    await startRunning(principal.tenantId, first.jobId);
    expect(await failureOf(createJob(principal, { mode: 'full' }))).toMatchObject(activeJobConflict(first.jobId));
    expect((await listJobs(principal.tenantId, { limit: 10, cursor: undefined })).items.map((job) => job.jobId)).toEqual([first.jobId]);
  });

  it('of another tenant is not held back by this one', async () => {
    const { jobId } = await runningJob();
    const other = await createJob(adminCaller(), { mode: 'incremental' });
    expect(other.jobId).not.toBe(jobId);
    expect(other.status).toBe('Queued');
  });

  it('after the active job ended is the next active one', async () => {
    const principal = adminCaller();
    for (const outcome of [{ counts: { sources: 0, chunks: 0, written: 0, unchanged: 0, deleted: 0 } }, { error: 'broken' }, { cancelled: true as const }]) {
      const { jobId } = await createJob(principal, { mode: 'incremental' });
      await finishJob(principal.tenantId, jobId, outcome);
      expect(await storedLock(principal.tenantId)).toBeUndefined();
    }
    const next = await createJob(principal, { mode: 'incremental' });
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: next.jobId });
  });

  it('releases a lock left behind by a job that ended, or is gone, and starts', async () => {
    const { principal } = await endedJobStillLocking('Failed');
    const next = await createJob(principal, { mode: 'incremental' });
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: next.jobId });

    await embedded.direct().item(next.jobId, principal.tenantId).delete();
    const after = await createJob(principal, { mode: 'incremental' });
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: after.jobId });
  });

  it('releases a left-behind lock that another start released first', async () => {
    const { principal } = await endedJobStillLocking('Succeeded');
    const isLockDelete = (record: CosmosRequestRecord) => record.method === 'DELETE' && record.path.endsWith(`/docs/${LOCK_ID}`);
    beforeRequest(embedded.store, isLockDelete, async () => {
      await embedded.direct().item(LOCK_ID, principal.tenantId).delete();
    });
    const next = await createJob(principal, { mode: 'incremental' });
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: next.jobId });
  });

  it('leaves alone the lock of a job that started after the lock it found was let go: the 409 names that job', async () => {
    const principal = adminCaller();
    const first = await createJob(principal, { mode: 'incremental' });
    let next = '';
    // It has read the lock (the first job's); before it reads that job, the job ends and another start takes the lock.
    beforeRequest(
      embedded.store,
      (record) => record.method === 'GET' && record.path.endsWith(`/docs/${first.jobId}`),
      async () => {
        await finishJob(principal.tenantId, first.jobId, { cancelled: true });
        next = (await createJob(principal, { mode: 'full' })).jobId;
      },
    );
    expect(await failureOf(createJob(principal, { mode: 'incremental' }))).toMatchObject(activeJobConflict(next));
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: next });
    expect((await listJobs(principal.tenantId, { limit: 10, cursor: undefined })).items.map((job) => job.jobId)).toEqual([next, first.jobId]);
  });

  it('fails, storing nothing, when the left-behind lock cannot be released', async () => {
    const { principal, ended } = await endedJobStillLocking('Cancelled');
    embedded.store.intercept = (record) => (record.method === 'DELETE' ? STORE_FAILURE : undefined);
    expect((await errorOf(createJob(principal, { mode: 'incremental' }))).code).toBe(500);
    embedded.store.intercept = undefined;
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: ended.jobId });
    expect((await listJobs(principal.tenantId, { limit: 10, cursor: undefined })).items).toHaveLength(1);
  });

  it('racing another start: one wins, the other gets the 409 naming the winner', async () => {
    const principal = adminCaller();
    let winner: string | undefined;
    beforeRequest(embedded.store, isBatch, async () => {
      winner = (await createJob(principal, { mode: 'full' })).jobId;
    });
    expect(await failureOf(createJob(principal, { mode: 'incremental' }))).toMatchObject(activeJobConflict(winner!));
    expect((await listJobs(principal.tenantId, { limit: 10, cursor: undefined })).items.map((job) => job.jobId)).toEqual([winner]);
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: winner });
  });

  it('racing another start that ends before it looks again: it starts after all', async () => {
    const principal = adminCaller();
    let winner = '';
    beforeRequest(embedded.store, isBatch, async () => {
      winner = (await createJob(principal, { mode: 'full' })).jobId;
      // Its lock is taken; before it reads the lock again, the winner is cancelled.
      beforeRequest(embedded.store, isLockRead, async () => {
        await requestCancel(principal.tenantId, winner);
      });
    });
    const late = await createJob(principal, { mode: 'incremental' });
    expect(late.jobId).not.toBe(winner);
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: late.jobId });
    expect((await getJob(principal.tenantId, winner)).status).toBe('Cancelled');
  });

  it('gives up after three attempts whose lock was taken each time, naming the lock it then finds', async () => {
    const principal = adminCaller();
    let batches = 0;
    embedded.store.intercept = (record) => {
      if (!isBatch(record)) return undefined;
      batches++;
      return { status: 200, body: [{ statusCode: 409 }, { statusCode: 424 }] };
    };
    expect(await failureOf(createJob(principal, { mode: 'incremental' }))).toMatchObject(activeJobConflict('unknown'));
    expect(batches).toBe(3);

    const lockHolder = randomUUID();
    await embedded.direct().items.create({ id: LOCK_ID, tenantId: principal.tenantId, type: 'ragActiveJob', jobId: lockHolder });
    // The lock's job reads as gone each time, so each attempt goes on to its batch.
    embedded.store.intercept = (record) => {
      if (isBatch(record)) return { status: 200, body: [{ statusCode: 409 }, { statusCode: 424 }] };
      if (record.method === 'DELETE') return { status: 404, body: { code: 'NotFound', message: 'gone' } };
      return undefined;
    };
    expect(await failureOf(createJob(principal, { mode: 'incremental' }))).toMatchObject(activeJobConflict(lockHolder));
  });

  it('fails when the store does not create the job', async () => {
    const principal = adminCaller();
    embedded.store.intercept = (record) => (isBatch(record) ? { status: 200, body: [{ statusCode: 201 }, { statusCode: 429 }] } : undefined);
    expect((await errorOf(createJob(principal, { mode: 'incremental' }))).message).toBe('Storing the RAG job failed: 201,429');
    embedded.store.intercept = (record) => (isBatch(record) ? { status: 200, body: [] } : undefined);
    expect((await errorOf(createJob(principal, { mode: 'incremental' }))).message).toBe('Storing the RAG job failed: ');
  });
});

describe('starting a job with an Idempotency-Key', () => {
  const keyed = (key = randomUUID()): Idempotency => ({ key, scope: 'rag-index-start' });
  const jobsOf = async (principal: Principal) => (await listJobs(principal.tenantId, { limit: 10, cursor: undefined })).items.map((job) => job.jobId);

  it('answers the same key again with the job as first answered, starting nothing, while it runs and after it ended', async () => {
    const principal = adminCaller();
    const key = keyed();
    const first = await startJob(principal.tenantId, principal.objectId, { mode: 'full', projectIds: ['PRJ-1'] }, key);
    expect(first).toEqual({ resource: expect.objectContaining({ status: 'Queued', mode: 'full' }), replayed: false });
    // Running: a start without the key is a 409, the key's retry is its first answer.
    await startRunning(principal.tenantId, first.resource.jobId);
    expect(await failureOf(createJob(principal, { mode: 'full', projectIds: ['PRJ-1'] }))).toMatchObject(activeJobConflict(first.resource.jobId));
    expect(await startJob(principal.tenantId, principal.objectId, { mode: 'full', projectIds: ['PRJ-1'] }, key)).toEqual({
      resource: first.resource,
      replayed: true,
    });
    // Ended: the tenant is free, yet the key's retry starts nothing.
    await finishJob(principal.tenantId, first.resource.jobId, { counts: { sources: 1, chunks: 1, written: 1, unchanged: 0, deleted: 0 } });
    expect(await startJob(principal.tenantId, principal.objectId, { mode: 'full', projectIds: ['PRJ-1'] }, key)).toEqual({
      resource: first.resource,
      replayed: true,
    });
    expect(await storedLock(principal.tenantId)).toBeUndefined();
    expect(await jobsOf(principal)).toEqual([first.resource.jobId]);
  });

  it("refuses the same key with another request (422), and keys another caller's or another key's start apart", async () => {
    const principal = adminCaller();
    const key = keyed();
    const first = await startJob(principal.tenantId, principal.objectId, { mode: 'incremental' }, key);
    expect(await failureOf(startJob(principal.tenantId, principal.objectId, { mode: 'full' }, key))).toMatchObject({
      refusal: 'keyReused',
      messageKey: 'idempotencyKeyReused',
    });
    expect(await failureOf(startJob(principal.tenantId, principal.objectId, { mode: 'incremental', projectIds: ['PRJ-1'] }, key))).toMatchObject({
      refusal: 'keyReused',
    });
    await finishJob(principal.tenantId, first.resource.jobId, { cancelled: true });
    // Another caller of the tenant with the same key, and the same caller with another key: starts of their own.
    const colleague = { ...principal, objectId: randomUUID() };
    const theirs = await startJob(colleague.tenantId, colleague.objectId, { mode: 'incremental' }, key);
    expect(theirs.replayed).toBe(false);
    await finishJob(principal.tenantId, theirs.resource.jobId, { cancelled: true });
    const another = await startJob(principal.tenantId, principal.objectId, { mode: 'incremental' }, keyed());
    expect(another.replayed).toBe(false);
    expect(new Set([first.resource.jobId, theirs.resource.jobId, another.resource.jobId]).size).toBe(3);
  });

  it('records nothing for a start refused with a 409 or failed by the store: the same key then starts a job', async () => {
    const principal = adminCaller();
    const key = keyed();
    const { jobId: active } = await createJob(principal, { mode: 'incremental' });
    expect(await failureOf(startJob(principal.tenantId, principal.objectId, { mode: 'incremental' }, key))).toMatchObject(activeJobConflict(active));
    await finishJob(principal.tenantId, active, { cancelled: true });
    const throttledJob = [{ statusCode: 201 }, { statusCode: 201 }, { statusCode: 429 }];
    embedded.store.intercept = (record) => (isBatch(record) ? { status: 200, body: throttledJob } : undefined);
    expect((await errorOf(startJob(principal.tenantId, principal.objectId, { mode: 'incremental' }, key))).message).toBe(
      'Storing the RAG job failed: 201,201,429',
    );
    embedded.store.intercept = undefined;
    const started = await startJob(principal.tenantId, principal.objectId, { mode: 'incremental' }, key);
    expect(started.replayed).toBe(false);
    expect(started.resource.jobId).not.toBe(active);
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: started.resource.jobId });
    expect(await jobsOf(principal)).toEqual([started.resource.jobId, active]);
  });

  it.each([
    ['running', false],
    // The tenant is free again: only the key's record stands in the way of the late start's batch.
    ['already ended', true],
  ])('racing a start with the same key whose job is %s: the late one answers that job, and starts none', async (_, ended) => {
    const principal = adminCaller();
    const key = keyed();
    let winner: Awaited<ReturnType<typeof startJob>> | undefined;
    beforeRequest(embedded.store, isBatch, async () => {
      winner = await startJob(principal.tenantId, principal.objectId, { mode: 'incremental' }, key);
      if (ended) await finishJob(principal.tenantId, winner.resource.jobId, { cancelled: true });
    });
    const late = await startJob(principal.tenantId, principal.objectId, { mode: 'incremental' }, key);
    expect(winner!.replayed).toBe(false);
    expect(late).toEqual({ resource: winner!.resource, replayed: true });
    expect(await jobsOf(principal)).toEqual([winner!.resource.jobId]);
    expect(await storedLock(principal.tenantId)).toEqual(ended ? undefined : expect.objectContaining({ jobId: winner!.resource.jobId }));
  });
});

describe('reading jobs', () => {
  it("of another tenant is the job's 404", async () => {
    const { jobId } = await runningJob();
    expect(await failureOf(getJob(adminCaller().tenantId, jobId))).toMatchObject({ refusal: 'notFound', messageKey: 'ragJobNotFound', params: { id: jobId } });
    const long = 'x'.repeat(150);
    expect((await failureOf(getJob(adminCaller().tenantId, long))).params).toEqual({ id: 'x'.repeat(100) });
  });

  it("lists the tenant's jobs newest first, a page at a time, and no other tenant's", async () => {
    const principal = adminCaller();
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) {
      const { jobId } = await createJob(principal, { mode: 'incremental' });
      ids.push(jobId);
      await finishJob(principal.tenantId, jobId, { cancelled: true });
    }
    await createJob(adminCaller(), { mode: 'incremental' });
    const first = await listJobs(principal.tenantId, { limit: 2, cursor: undefined });
    expect(first.items.map((job) => job.jobId)).toEqual([ids[2], ids[1]]);
    expect(first.items[0]).toMatchObject({ status: 'Cancelled', mode: 'incremental' });
    expect(first.nextCursor).toBeDefined();
    const second = await listJobs(principal.tenantId, { limit: 2, cursor: first.nextCursor });
    expect(second.items.map((job) => job.jobId)).toEqual([ids[0]]);
    expect(second.nextCursor).toBeUndefined();
  });
});

describe('a job under way', () => {
  it('is marked dispatched, then Running from its first start on, progress from nothing', async () => {
    const principal = adminCaller();
    const { jobId } = await createJob(principal, { mode: 'incremental' });
    expect(await markDispatched(principal.tenantId, jobId)).toMatchObject({ dispatched: true, status: 'Queued' });
    const before = Date.now();
    const running = await startRunning(principal.tenantId, jobId);
    expect(running).toMatchObject({ status: 'Running', dispatched: true, progress: { sources: 0, batches: 0, batchesDone: 0 } });
    expect(Date.parse(running!.startedAt!)).toBeGreaterThanOrEqual(before);
    await recordBatchesDone(principal.tenantId, jobId, 1);
    const again = await startRunning(principal.tenantId, jobId);
    expect(again).toMatchObject({ startedAt: running!.startedAt, progress: { sources: 0, batches: 0, batchesDone: 1 } });
    expect(await stored(principal.tenantId, jobId)).toMatchObject({ status: 'Running', startedAt: running!.startedAt });
  });

  it('records its planning a step at a time from where it stands: a step from elsewhere (a second run) changes nothing', async () => {
    const { tenantId, jobId } = await runningJob();
    const start = { kind: 'project' as const, continuation: undefined };
    const cursor = { kind: 'task' as const, continuation: 'next-page' };
    expect(await recordPlanning(tenantId, jobId, { from: start, to: cursor, sources: 500, batches: 1 })).toMatchObject({
      planned: false,
      planCursor: cursor,
      progress: { sources: 500, batches: 1, batchesDone: 0 },
    });
    await recordBatchesDone(tenantId, jobId, 1);
    const before = await stored(tenantId, jobId);
    // A second planning run, behind: its step is not recorded.
    expect(await recordPlanning(tenantId, jobId, { from: start, to: cursor, sources: 500, batches: 1 })).toBeUndefined();
    expect(await recordPlanning(tenantId, jobId, { from: { kind: 'task', continuation: 'other-page' }, to: null, sources: 1, batches: 1 })).toBeUndefined();
    expect(await stored(tenantId, jobId)).toEqual(before);
    // The last step: every batch is planned, and no step is recorded after it.
    expect(await recordPlanning(tenantId, jobId, { from: cursor, to: null, sources: 200, batches: 1 })).toMatchObject({
      planned: true,
      planCursor: null,
      progress: { sources: 700, batches: 2, batchesDone: 1 },
    });
    expect(await recordPlanning(tenantId, jobId, { from: start, to: null, sources: 1, batches: 1 })).toBeUndefined();
    expect(await finishPlanning(tenantId, jobId)).toMatchObject({ planned: true, planCursor: null, progress: { sources: 700, batches: 2 } });
  });

  it('records planning of a job whose progress is not shown yet', async () => {
    const principal = adminCaller();
    const { jobId } = await createJob(principal, { mode: 'incremental' });
    const step = { from: { kind: 'project' as const, continuation: undefined }, to: null, sources: 3, batches: 1 };
    expect((await recordPlanning(principal.tenantId, jobId, step))!.progress).toEqual({ sources: 3, batches: 1, batchesDone: 0 });
  });

  it('counts batches done: never fewer than it shows, from nothing when no progress is shown', async () => {
    const principal = adminCaller();
    const { jobId } = await createJob(principal, { mode: 'incremental' });
    expect((await recordBatchesDone(principal.tenantId, jobId, 2))!.progress).toEqual({ sources: 0, batches: 0, batchesDone: 2 });
    await recordPlanning(principal.tenantId, jobId, { from: { kind: 'project', continuation: undefined }, to: null, sources: 600, batches: 3 });
    expect((await recordBatchesDone(principal.tenantId, jobId, 1))!.progress).toEqual({ sources: 600, batches: 3, batchesDone: 2 });
    expect((await recordBatchesDone(principal.tenantId, jobId, 3))!.progress).toEqual({ sources: 600, batches: 3, batchesDone: 3 });
    expect((await stored(principal.tenantId, jobId))!.progress).toEqual({ sources: 600, batches: 3, batchesDone: 3 });
  });

  it('that ended, or is gone, is left as it is by every step', async () => {
    const { tenantId, jobId } = await runningJob();
    await finishJob(tenantId, jobId, { error: 'stopped' });
    const ended = await stored(tenantId, jobId);
    const writes = writesIn(embedded.store.requests).length;
    for (const id of [jobId, randomUUID()]) {
      expect(await markDispatched(tenantId, id)).toBeUndefined();
      expect(await startRunning(tenantId, id)).toBeUndefined();
      expect(await recordPlanning(tenantId, id, { from: { kind: 'project', continuation: undefined }, to: null, sources: 1, batches: 1 })).toBeUndefined();
      expect(await finishPlanning(tenantId, id)).toBeUndefined();
      expect(await recordBatchesDone(tenantId, id, 5)).toBeUndefined();
      expect(await startFinishing(tenantId, id, 'runner-1', 60_000)).toBeUndefined();
      expect(await recordSweep(tenantId, id, { deleted: 1, pending: [] }, 60_000)).toBeUndefined();
    }
    expect(writesIn(embedded.store.requests).length).toBe(writes);
    expect(await stored(tenantId, jobId)).toEqual(ended);
  });

  it('that ends while a step changes it stays as it ended', async () => {
    const { tenantId, jobId } = await runningJob();
    beforeRequest(embedded.store, isBatch, async () => {
      await finishJob(tenantId, jobId, { cancelled: true });
    });
    expect(await recordBatchesDone(tenantId, jobId, 4)).toBeUndefined();
    const job = (await stored(tenantId, jobId))!;
    expect(job.status).toBe('Cancelled');
    expect(job.progress!.batchesDone).toBe(0);
  });

  it("keeps its last attempt's error, cut to 1,000 characters; a job that is gone has none to keep", async () => {
    const { tenantId, jobId } = await runningJob();
    await recordAttemptError(tenantId, jobId, 'e'.repeat(1_200));
    expect((await stored(tenantId, jobId))!.lastError).toBe('e'.repeat(1_000));
    expect((await stored(tenantId, jobId))!.status).toBe('Running');
    const gone = randomUUID();
    await recordAttemptError(tenantId, gone, 'lost');
    expect(await stored(tenantId, gone)).toBeUndefined();
  });

  it("fails when its attempt's error cannot be kept", async () => {
    const { tenantId, jobId } = await runningJob();
    embedded.store.intercept = (record) => (record.method === 'PATCH' ? STORE_FAILURE : undefined);
    expect((await errorOf(recordAttemptError(tenantId, jobId, 'lost'))).code).toBe(500);
    embedded.store.intercept = undefined;
    expect((await stored(tenantId, jobId))!.lastError).toBeUndefined();
  });
});

describe('the finishing', () => {
  it('is held by one run until its hold lapses; the same run takes it back at once', async () => {
    const { tenantId, jobId } = await runningJob();
    const before = Date.now();
    const taken = await startFinishing(tenantId, jobId, 'runner-1', 60_000);
    const after = Date.now();
    expect(taken!.finishing!.runner).toBe('runner-1');
    const until = Date.parse(taken!.finishing!.until);
    expect(until).toBeGreaterThanOrEqual(before + 60_000);
    expect(until).toBeLessThanOrEqual(after + 60_000);
    expect(await stored(tenantId, jobId)).toMatchObject({ finishing: taken!.finishing });

    // A message delivered twice leaves it alone.
    expect(await startFinishing(tenantId, jobId, 'runner-2', 60_000)).toBeUndefined();
    expect((await stored(tenantId, jobId))!.finishing).toEqual(taken!.finishing);

    // Its own message, delivered again after a failed run, takes it back.
    expect((await startFinishing(tenantId, jobId, 'runner-1', 120_000))!.finishing!.runner).toBe('runner-1');
    expect(Date.parse((await stored(tenantId, jobId))!.finishing!.until)).toBeGreaterThan(until);
  });

  it('is taken over once the hold lapsed', async () => {
    const { tenantId, jobId } = await runningJob();
    await storeFields(tenantId, jobId, { finishing: { runner: 'runner-1', until: new Date(Date.now() - 1_000).toISOString() } });
    const taken = await startFinishing(tenantId, jobId, 'runner-2', 60_000);
    expect(taken!.finishing!.runner).toBe('runner-2');
    expect((await stored(tenantId, jobId))!.finishing!.runner).toBe('runner-2');
  });

  it('has lapsed the moment its hold ends', async () => {
    const { tenantId, jobId } = await runningJob();
    const until = new Date(Date.now() + 60_000).toISOString();
    await storeFields(tenantId, jobId, { finishing: { runner: 'runner-1', until } });
    const clock = vi.spyOn(Date, 'now').mockReturnValue(Date.parse(until));
    try {
      expect((await startFinishing(tenantId, jobId, 'runner-2', 60_000))!.finishing).toEqual({
        runner: 'runner-2',
        until: new Date(Date.parse(until) + 60_000).toISOString(),
      });
    } finally {
      clock.mockRestore();
    }
  });

  it('records how far its removals came and keeps its hold for another lease', async () => {
    const { tenantId, jobId } = await runningJob();
    const held = (await startFinishing(tenantId, jobId, 'runner-1', 1_000))!.finishing!;
    const sweep: Sweep = { deleted: 3, pending: [{ id: 'chunk-1', projectId: 'PRJ-1' }] };
    const before = Date.now();
    const recorded = await recordSweep(tenantId, jobId, sweep, 60_000);
    expect(recorded!.sweep).toEqual(sweep);
    expect(recorded!.finishing!.runner).toBe(held.runner);
    expect(Date.parse(recorded!.finishing!.until)).toBeGreaterThanOrEqual(before + 60_000);
    expect(await stored(tenantId, jobId)).toMatchObject({ sweep, finishing: recorded!.finishing });
  });

  it('records removals of a job that no run holds without holding it', async () => {
    const { tenantId, jobId } = await runningJob();
    const recorded = await recordSweep(tenantId, jobId, { deleted: 0, pending: [] }, 60_000);
    expect(recorded!.sweep).toEqual({ deleted: 0, pending: [] });
    expect((await stored(tenantId, jobId))!.finishing).toBeUndefined();
  });
});

describe('the end of a job', () => {
  it('Succeeded with its counts sends rag.job.succeeded with the job and frees the tenant', async () => {
    const { principal, tenantId, jobId } = await runningJob();
    await storeFields(tenantId, jobId, { error: 'an old error' });
    const counts = { sources: 6, chunks: 9, written: 9, unchanged: 0, deleted: 0 };
    const before = Date.now();
    await finishJob(tenantId, jobId, { counts });
    const job = await getJob(principal.tenantId, jobId);
    expect(job).toMatchObject({ status: 'Succeeded', counts, error: null });
    expect(Date.parse(job.completedAt!)).toBeGreaterThanOrEqual(before);
    const events = await eventsOf(tenantId);
    expect(events.map((event) => [event.eventType, event.data])).toEqual([['rag.job.succeeded', job]]);
    expect(await storedLock(tenantId)).toBeUndefined();
  });

  it('Failed with its error sends rag.job.failed', async () => {
    const { principal, tenantId, jobId } = await runningJob();
    await finishJob(tenantId, jobId, { error: 'Batch 3 failed: the store is down.' });
    const job = await getJob(principal.tenantId, jobId);
    expect(job).toMatchObject({ status: 'Failed', error: 'Batch 3 failed: the store is down.', counts: null });
    expect((await eventsOf(tenantId)).map((event) => [event.eventType, event.data])).toEqual([['rag.job.failed', job]]);
  });

  it("Failed without an error names the queue's last retry, and the last attempt's error if one was kept", async () => {
    const first = await runningJob();
    await finishJob(first.tenantId, first.jobId, { error: undefined });
    expect((await getJob(first.principal.tenantId, first.jobId)).error).toBe("Gave up after the queue's last retry.");

    const second = await runningJob();
    await recordAttemptError(second.tenantId, second.jobId, 'Embeddings answered 500.');
    await finishJob(second.tenantId, second.jobId, { error: undefined });
    expect((await getJob(second.principal.tenantId, second.jobId)).error).toBe("Gave up after the queue's last retry. Last error: Embeddings answered 500.");
  });

  it('Cancelled sends no event', async () => {
    const { principal, tenantId, jobId } = await runningJob();
    await storeFields(tenantId, jobId, { error: 'an old error' });
    await finishJob(tenantId, jobId, { cancelled: true });
    expect(await getJob(principal.tenantId, jobId)).toMatchObject({ status: 'Cancelled', error: null, counts: null });
    expect(await eventsOf(tenantId)).toEqual([]);
    expect(await storedLock(tenantId)).toBeUndefined();
  });

  it('happens once: a job that ended, or is gone, is left as it is', async () => {
    const { principal, tenantId, jobId } = await runningJob();
    await finishJob(tenantId, jobId, { error: 'first' });
    const ended = await stored(tenantId, jobId);
    await finishJob(tenantId, jobId, { counts: { sources: 1, chunks: 1, written: 1, unchanged: 0, deleted: 0 } });
    await finishJob(tenantId, randomUUID(), { cancelled: true });
    expect(await stored(tenantId, jobId)).toEqual(ended);
    expect(await eventsOf(tenantId)).toHaveLength(1);
    expect((await listJobs(principal.tenantId, { limit: 10, cursor: undefined })).items).toHaveLength(1);
  });

  it('leaves the lock of another job in place, and ends a job whose lock is gone', async () => {
    const principal = adminCaller();
    const { jobId } = await createJob(principal, { mode: 'incremental' });
    const other = randomUUID();
    await embedded.direct().item(LOCK_ID, principal.tenantId).replace({ id: LOCK_ID, tenantId: principal.tenantId, type: 'ragActiveJob', jobId: other });
    await finishJob(principal.tenantId, jobId, { cancelled: true });
    expect((await getJob(principal.tenantId, jobId)).status).toBe('Cancelled');
    expect(await storedLock(principal.tenantId)).toMatchObject({ jobId: other });

    await embedded.direct().item(LOCK_ID, principal.tenantId).delete();
    const next = await createJob(principal, { mode: 'incremental' });
    await embedded.direct().item(LOCK_ID, principal.tenantId).delete();
    await finishJob(principal.tenantId, next.jobId, { cancelled: true });
    expect((await getJob(principal.tenantId, next.jobId)).status).toBe('Cancelled');
  });

  it('keeps a change made while it was under way', async () => {
    const { principal, tenantId, jobId } = await runningJob();
    beforeRequest(embedded.store, isBatch, async () => {
      await storeFields(tenantId, jobId, { progress: { sources: 5, batches: 1, batchesDone: 1 } });
    });
    await finishJob(tenantId, jobId, { error: 'late' });
    expect(await getJob(principal.tenantId, jobId)).toMatchObject({ status: 'Failed', error: 'late', progress: { sources: 5, batches: 1, batchesDone: 1 } });
    expect(await eventsOf(tenantId)).toHaveLength(1);
  });

  it('fails, changing nothing, when the store refuses its write', async () => {
    const { tenantId, jobId } = await runningJob();
    // Without its lock, ending a job is one write: the store's 400 is the batch's only answer.
    await embedded.direct().item(LOCK_ID, tenantId).delete();
    embedded.store.intercept = (record) => (isBatch(record) ? { status: 200, body: [{ statusCode: 400 }] } : undefined);
    expect((await errorOf(finishJob(tenantId, jobId, { cancelled: true }))).message).toBe(`Finishing RAG job ${jobId} failed: 400`);
    embedded.store.intercept = undefined;
    expect((await stored(tenantId, jobId))!.status).toBe('Running');
  });

  it('fails, changing nothing, when its batch fails', async () => {
    const { tenantId, jobId } = await runningJob();
    beforeRequest(embedded.store, isBatch, async () => {
      // The lock goes (a release by another instance) after it was read: the batch's delete fails.
      await embedded.direct().item(LOCK_ID, tenantId).delete();
    });
    const error = await errorOf(finishJob(tenantId, jobId, { cancelled: true }));
    expect(error.message).toMatch(new RegExp(`^Finishing RAG job ${jobId} failed: `));
    expect((await stored(tenantId, jobId))!.status).toBe('Running');
  });
});

describe('a cancel', () => {
  it('of a Queued job ends it Cancelled at once and frees the tenant', async () => {
    const principal = adminCaller();
    const { jobId } = await createJob(principal, { mode: 'incremental' });
    const before = Date.now();
    const cancelled = await requestCancel(principal.tenantId, jobId);
    expect(cancelled).toMatchObject({ jobId, status: 'Cancelled' });
    expect(Date.parse(cancelled.cancelRequestedAt!)).toBeGreaterThanOrEqual(before);
    expect(cancelled.completedAt).not.toBeNull();
    expect(await getJob(principal.tenantId, jobId)).toEqual(cancelled);
    expect(await storedLock(principal.tenantId)).toBeUndefined();
  });

  it('of a Running job asks it to stop: it stays Running, the first request time kept', async () => {
    const { principal, tenantId, jobId } = await runningJob();
    const asked = await requestCancel(principal.tenantId, jobId);
    expect(asked).toMatchObject({ jobId, status: 'Running', completedAt: null, cancelRequestedAt: expect.any(String) });
    expect(await getJob(principal.tenantId, jobId)).toEqual(asked);
    expect(await storedLock(tenantId)).toMatchObject({ jobId });
    const again = await requestCancel(principal.tenantId, jobId);
    expect(again.cancelRequestedAt).toBe(asked.cancelRequestedAt);
  });

  it('of a job that ended is a 409 naming its status', async () => {
    const { principal, tenantId, jobId } = await runningJob();
    await finishJob(tenantId, jobId, { counts: { sources: 0, chunks: 0, written: 0, unchanged: 0, deleted: 0 } });
    const ended = await stored(tenantId, jobId);
    expect(await failureOf(requestCancel(principal.tenantId, jobId))).toMatchObject({
      refusal: 'conflict',
      messageKey: 'ragJobFinished',
      params: { id: jobId, status: 'Succeeded' },
    });
    expect(await stored(tenantId, jobId)).toEqual(ended);
  });

  it('of a job that ends as it is asked is a 409 naming how it ended', async () => {
    const { principal, tenantId, jobId } = await runningJob();
    beforeRequest(embedded.store, isBatch, async () => {
      await finishJob(tenantId, jobId, { error: 'broken' });
    });
    expect(await failureOf(requestCancel(principal.tenantId, jobId))).toMatchObject({
      refusal: 'conflict',
      messageKey: 'ragJobFinished',
      params: { id: jobId, status: 'Failed' },
    });
    expect((await stored(tenantId, jobId))!.cancelRequestedAt).toBeNull();
  });

  it("of another tenant's job is its 404", async () => {
    const { tenantId, jobId } = await runningJob();
    expect(await failureOf(requestCancel(adminCaller().tenantId, jobId))).toMatchObject({ refusal: 'notFound', messageKey: 'ragJobNotFound' });
    expect((await stored(tenantId, jobId))!.cancelRequestedAt).toBeNull();
  });
});
