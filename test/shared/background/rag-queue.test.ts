/**
 * The RAG job's state machine (shared/background/rag-queue.ts) driven step by step, in process: the embedded
 * Cosmos store of the local stack started by this file, the embeddings stand-in, and an Azurite of
 * the file's own behind a front that records each message with its delay (test/support/queue-front.ts),
 * so a test hands each message to its step itself and sees what every step queued. The store is reached
 * through a proxy (test/support/cosmos-proxy.ts) and the embeddings through a front of this file's,
 * so that a test can fail a request, throttle one, or hold it while something else happens first.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startAzuriteQueue, type AzuriteQueue } from '../../../local/storage/azurite.js';
import { startEmbeddingsStandIn, type EmbeddingsStandIn } from '../../support/embeddings-stand-in.js';
import type { Principal } from '../../../shared/auth/principal.js';
import type { RagJobMessage } from '../../../shared/schemas/rag.js';
import { beforeRequest, isBatch, STORE_FAILURE } from '../../support/cosmos-proxy.js';
import { embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';
import { gate } from '../../support/wait.js';
import { messagesTaken, startQueueFront, type QueueFront, type TakenMessage } from '../../support/queue-front.js';
import { startSmallServer, type SmallServer } from '../../support/small-server.js';

const RAG_QUEUE = 'rag-jobs-test';

const embedded = embeddedStoreForTests();
let azurite: AzuriteQueue;
let front: QueueFront;
let embeddings: EmbeddingsStandIn;
let embeddingsFront: SmallServer;
/** What the RAG queue took, in order. */
const queued = () => messagesTaken<RagJobMessage>(front, RAG_QUEUE);

/**
 * What the embeddings front does with the requests to come, a turn each, in order: pass the request
 * on to the stand-in (undefined), answer it with a 429 that asks for `throttleSeconds`, or with a
 * 503 that asks for a retry a millisecond later (`unavailable`). The request waits for its turn to
 * settle. Past the turns, requests pass on.
 */
const embeddingsTurns: (() => Promise<{ throttleSeconds: number } | { unavailable: true } | undefined>)[] = [];

function embeddingsService(request: IncomingMessage, response: ServerResponse) {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => void passOnEmbeddings(request, Buffer.concat(chunks), response).catch(() => response.destroy()));
}

async function passOnEmbeddings(request: IncomingMessage, body: Buffer, response: ServerResponse) {
  const turn = await embeddingsTurns.shift()?.();
  if (turn && 'unavailable' in turn) {
    const error = { message: 'The server is overloaded or not ready yet.', type: 'server_error', param: null, code: null };
    response.writeHead(503, { 'content-type': 'application/json', 'retry-after-ms': '1' }).end(JSON.stringify({ error }));
    return;
  }
  if (turn) {
    const error = { message: 'Rate limit reached for requests.', type: 'requests', param: null, code: 'rate_limit_exceeded' };
    response.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(turn.throttleSeconds) }).end(JSON.stringify({ error }));
    return;
  }
  const answer = await fetch(`${embeddings.url}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: request.headers.authorization ?? '' },
    body,
  });
  const headers = Object.fromEntries(
    ['content-type', 'retry-after', 'retry-after-ms'].flatMap((name) => (answer.headers.has(name) ? [[name, answer.headers.get(name)!]] : [])),
  );
  response.writeHead(answer.status, headers).end(Buffer.from(await answer.arrayBuffer()));
}

beforeAll(async () => {
  azurite = await startAzuriteQueue();
  front = await startQueueFront(azurite);
  embeddings = await startEmbeddingsStandIn({ apiKey: 'embeddings-key' });
  embeddingsFront = await startSmallServer(embeddingsService);
  Object.assign(process.env, {
    AzureWebJobsStorage: front.connectionString,
    RAG_QUEUE_NAME: RAG_QUEUE,
    EMBEDDINGS_ENDPOINT: `${embeddingsFront.url}/v1`,
    EMBEDDINGS_API_KEY: 'embeddings-key',
    EMBEDDINGS_MODEL: 'text-embedding-3-small',
  });
});
afterEach(() => {
  embeddingsTurns.length = 0;
});
afterAll(async () => {
  await embeddingsFront?.close();
  await embeddings?.close();
  await front?.close();
  await azurite?.close();
});

const jobs = () => import('../../../shared/background/rag-queue.js');
const repository = () => import('../../../shared/data/rag-jobs-repository.js');
const batches = () => import('../../../shared/data/rag-batches-repository.js');
/** The run that holds a batch: one delivery of its message. */
const RUNNER = 'test-run';
const index = () => import('../../../shared/data/rag-index-repository.js');
const projectsRepository = () => import('../../../shared/data/projects-repository.js');
const tasksRepository = () => import('../../../shared/data/tasks-repository.js');

/** About `chunks` chunks of description (the chunker cuts at 1,200 characters, overlapping by 200). */
const longText = (chunks: number) =>
  Array.from({ length: chunks * 10 }, (_, index) => `Sentence ${index} ${'of a long description '.repeat(4)}ends.`).join(' ');

/** A tenant (of a new administrator, unless given) with these projects and tasks. */
async function tenantWithSources(shape: { projects: number; tasksPerProject: number; longDescription?: boolean }, principal = adminCaller()) {
  const { createProject } = await projectsRepository();
  const { createTask } = await tasksRepository();
  const projectIds: string[] = [];
  const taskIds: string[] = [];
  for (let p = 0; p < shape.projects; p++) {
    const { resource } = await createProject(
      principal.tenantId,
      principal.objectId,
      principal.email!,
      { name: `Project ${p}`, description: shape.longDescription && p === 0 ? longText(3) : `About ${p}` },
      undefined,
    );
    projectIds.push(resource.id);
    for (let t = 0; t < shape.tasksPerProject; t++) {
      const task = await createTask(principal.tenantId, principal.objectId, { projectId: resource.id, title: `Task ${p}.${t}` }, undefined);
      taskIds.push(task.resource.id);
    }
  }
  return { principal, projectIds, taskIds };
}

/** The messages queued for this job since `from`. */
const messagesOf = (jobId: string, from = 0) =>
  queued()
    .slice(from)
    .filter((entry) => entry.message.jobId === jobId);

/** Has `first` run before the job's first batch is made, as its create reaches the store. */
const beforeFirstBatch = (jobId: string, first: () => Promise<unknown>) =>
  beforeRequest(
    embedded.store,
    (record) => record.method === 'POST' && record.body.includes(`"${jobId}-b0"`),
    async () => void (await first()),
  );

/** Hands each message of the job to its step, as the queue trigger does, until none is left; the steps run in the order queued. */
async function drain(tenantId: string, jobId: string, from: number): Promise<TakenMessage<RagJobMessage>[]> {
  const { plan, runBatch, finish } = await jobs();
  const handled: TakenMessage<RagJobMessage>[] = [];
  for (let next = from; next < queued().length; next++) {
    const entry = queued()[next]!;
    if (entry.message.jobId !== jobId) continue;
    handled.push(entry);
    const { message } = entry;
    if ('finish' in message && message.finish) await finish(tenantId, jobId, 'runner-1');
    else if ('batch' in message && message.batch !== undefined) await runBatch(tenantId, jobId, message.batch, RUNNER);
    else await plan(tenantId, jobId);
  }
  return handled;
}

async function startJob(principal: Principal, body: { mode: 'incremental' | 'full'; projectIds?: string[] }) {
  const { createJob, readJobDocument } = await repository();
  const { resource: job } = await createJob(principal.tenantId, principal.objectId, body, undefined);
  const from = queued().length;
  await (await jobs()).dispatch((await readJobDocument(principal.tenantId, job.jobId))!);
  return { jobId: job.jobId, from };
}

/** A job started and planned: its batches are queued, and none has run. */
async function plannedJob(principal: Principal, body: { mode: 'incremental' | 'full' } = { mode: 'incremental' }) {
  const started = await startJob(principal, body);
  await (await jobs()).plan(principal.tenantId, started.jobId);
  return started;
}

/** A tenant (of a new administrator) with these sources, and an incremental job of it started, not planned yet. */
async function startedJobWith(sources: Parameters<typeof tenantWithSources>[0]) {
  const tenant = await tenantWithSources(sources);
  return { ...tenant, ...(await startJob(tenant.principal, { mode: 'incremental' })) };
}

/** A tenant (of a new administrator) with these sources, and a job of it started and planned. */
async function plannedJobWith(sources: Parameters<typeof tenantWithSources>[0], body?: { mode: 'incremental' | 'full' }) {
  const tenant = await tenantWithSources(sources);
  return { ...tenant, ...(await plannedJob(tenant.principal, body)) };
}

async function runJob(principal: Principal, body: { mode: 'incremental' | 'full'; projectIds?: string[] }) {
  const { jobId, from } = await startJob(principal, body);
  const handled = await drain(principal.tenantId, jobId, from);
  const job = (await (await repository()).readJobDocument(principal.tenantId, jobId))!;
  return { job, handled };
}

async function storedChunks(tenantId: string) {
  const pages: { id: string; sourceId: string; projectId: string; jobId: string; hasEmbedding: boolean }[] = [];
  for await (const page of (await index()).chunkPages(tenantId, null, 1_000)) pages.push(...(page as typeof pages));
  return pages;
}

describe('a RAG job', () => {
  it('plans a batch of projects and one of tasks, indexes each once and ends with exact counts', async () => {
    const { principal } = await tenantWithSources({ projects: 2, tasksPerProject: 2, longDescription: true });
    const before = embeddings.counts.inputs;
    const { job, handled } = await runJob(principal, { mode: 'incremental' });
    expect(handled.map((entry) => entry.message)).toEqual([
      { tenantId: principal.tenantId, jobId: job.id },
      { tenantId: principal.tenantId, jobId: job.id, batch: 0 },
      { tenantId: principal.tenantId, jobId: job.id, batch: 1 },
      { tenantId: principal.tenantId, jobId: job.id, finish: true },
    ]);
    expect(handled.every((entry) => entry.delaySeconds === 0)).toBe(true);
    const chunks = await storedChunks(principal.tenantId);
    expect(chunks.length).toBeGreaterThan(6);
    expect(job).toMatchObject({ status: 'Succeeded', planned: true, progress: { sources: 6, batches: 2, batchesDone: 2 } });
    expect(job.counts).toEqual({ sources: 6, chunks: chunks.length, written: chunks.length, unchanged: 0, deleted: 0 });
    expect(embeddings.counts.inputs - before).toBe(chunks.length);
    expect(chunks.every((chunk) => chunk.jobId === job.id && chunk.hasEmbedding)).toBe(true);
  });

  it('then writes only what changed, removes what is gone, and embeds only the changed chunks', async () => {
    const { principal, projectIds, taskIds } = await tenantWithSources({ projects: 2, tasksPerProject: 2, longDescription: true });
    const first = await runJob(principal, { mode: 'incremental' });
    const total = first.job.counts!.chunks;
    const again = await runJob(principal, { mode: 'incremental' });
    expect(again.job.counts).toEqual({ sources: 6, chunks: total, written: 0, unchanged: total, deleted: 0 });
    // Nothing was rewritten: every chunk is still the first job's.
    expect((await storedChunks(principal.tenantId)).every((chunk) => chunk.jobId === first.job.id)).toBe(true);

    const longChunks = (await storedChunks(principal.tenantId)).filter((chunk) => chunk.sourceId === projectIds[0]).length;
    expect(longChunks).toBeGreaterThan(1);
    await (await projectsRepository()).updateProject(principal.tenantId, projectIds[0]!, { description: 'Short now.' }, undefined);
    await (await tasksRepository()).deleteTask(principal.tenantId, taskIds[3]!, undefined);
    const before = embeddings.counts.inputs;
    const changed = await runJob(principal, { mode: 'incremental' });
    // The shortened project makes one chunk where it made several; the deleted task's chunk goes in the final sweep.
    expect(changed.job.counts).toEqual({
      sources: 5,
      chunks: total - longChunks + 1 - 1,
      written: 1,
      unchanged: total - longChunks - 1,
      deleted: longChunks - 1 + 1,
    });
    expect(embeddings.counts.inputs - before).toBe(1);
    expect((await storedChunks(principal.tenantId)).length).toBe(total - longChunks + 1 - 1);
  });

  it('in full mode rewrites every chunk under its own name, embedding none that did not change', async () => {
    const { principal } = await tenantWithSources({ projects: 1, tasksPerProject: 2 });
    const first = await runJob(principal, { mode: 'incremental' });
    const before = embeddings.counts.inputs;
    const full = await runJob(principal, { mode: 'full' });
    const total = first.job.counts!.chunks;
    expect(full.job.counts).toEqual({ sources: 3, chunks: total, written: total, unchanged: 0, deleted: 0 });
    expect(embeddings.counts.inputs).toBe(before);
    const chunks = await storedChunks(principal.tenantId);
    expect(chunks.every((chunk) => chunk.jobId === full.job.id && chunk.hasEmbedding)).toBe(true);
  });

  it('limited to projects indexes those and their tasks only', async () => {
    const { principal, projectIds } = await tenantWithSources({ projects: 2, tasksPerProject: 1 });
    const { job } = await runJob(principal, { mode: 'incremental', projectIds: [projectIds[1]!] });
    expect(job.counts).toMatchObject({ sources: 2 });
    expect(new Set((await storedChunks(principal.tenantId)).map((chunk) => chunk.sourceId)).has(projectIds[0]!)).toBe(false);
  });

  it("limited to projects counts, as its sources and chunks, what the tenant's whole index holds; what it did, in its scope", async () => {
    const { principal, projectIds, taskIds } = await tenantWithSources({ projects: 3, tasksPerProject: 2, longDescription: true });
    const whole = await runJob(principal, { mode: 'incremental' });
    const total = (await storedChunks(principal.tenantId)).length;
    expect(whole.job.counts).toEqual({ sources: 9, chunks: total, written: total, unchanged: 0, deleted: 0 });
    // A task of a project outside the next job's scope is gone: that job leaves its chunk, which the index still holds.
    await (await tasksRepository()).deleteTask(principal.tenantId, taskIds[5]!, undefined);

    // The second project and its two tasks make a chunk each.
    const scoped = await runJob(principal, { mode: 'incremental', projectIds: [projectIds[1]!] });
    expect(scoped.job.counts).toEqual({ sources: 9, chunks: total, written: 0, unchanged: 3, deleted: 0 });
    const full = await runJob(principal, { mode: 'full', projectIds: [projectIds[1]!] });
    expect(full.job.counts).toEqual({ sources: 9, chunks: total, written: 3, unchanged: 0, deleted: 0 });
    expect((await storedChunks(principal.tenantId)).length).toBe(total);

    // The whole tenant's next job removes it.
    const after = await runJob(principal, { mode: 'incremental' });
    expect(after.job.counts).toEqual({ sources: 8, chunks: total - 1, written: 0, unchanged: total - 1, deleted: 1 });
  });

  it('with nothing to index plans no batch and ends at once', async () => {
    const principal = adminCaller();
    const { job, handled } = await runJob(principal, { mode: 'incremental' });
    expect(handled.map((entry) => Object.keys(entry.message).sort().join())).toEqual(['jobId,tenantId', 'finish,jobId,tenantId']);
    expect(job).toMatchObject({
      status: 'Succeeded',
      progress: { sources: 0, batches: 0 },
      counts: { sources: 0, chunks: 0, written: 0, unchanged: 0, deleted: 0 },
    });
  });
});

describe('each step', () => {
  it('is queued once: a stored job already dispatched, or no longer Queued, is left be', async () => {
    const principal = adminCaller();
    const { jobId, from } = await startJob(principal, { mode: 'incremental' });
    const { readJobDocument } = await repository();
    const { dispatch } = await jobs();
    const dispatched = (await readJobDocument(principal.tenantId, jobId))!;
    expect(dispatched.dispatched).toBe(true);
    await dispatch(dispatched);
    await dispatch({ ...dispatched, dispatched: undefined, status: 'Running' });
    expect(messagesOf(jobId, from)).toHaveLength(1);
  });

  it('runs a batch delivered twice once, and hands the finishing over only when every batch has ended', async () => {
    const { principal, jobId, from } = await plannedJobWith({ projects: 1, tasksPerProject: 1 });
    const { runBatch } = await jobs();
    const { readJobDocument } = await repository();
    const { readBatch } = await batches();
    expect(messagesOf(jobId, from).map((entry) => entry.message)).toEqual([
      { tenantId: principal.tenantId, jobId },
      { tenantId: principal.tenantId, jobId, batch: 0 },
      { tenantId: principal.tenantId, jobId, batch: 1 },
    ]);
    expect((await readBatch(principal.tenantId, jobId, 0))!.kind).toBe('project');
    expect((await readBatch(principal.tenantId, jobId, 1))!.kind).toBe('task');
    const before = embeddings.counts.inputs;
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    expect(messagesOf(jobId, from)).toHaveLength(3);
    const afterFirst = embeddings.counts.inputs;
    expect(afterFirst).toBeGreaterThan(before);
    const counts = (await readBatch(principal.tenantId, jobId, 0))!.counts;
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    expect(embeddings.counts.inputs).toBe(afterFirst);
    expect((await readBatch(principal.tenantId, jobId, 0))!.counts).toEqual(counts);
    expect((await readJobDocument(principal.tenantId, jobId))!.progress).toMatchObject({ batchesDone: 1 });
    await runBatch(principal.tenantId, jobId, 1, RUNNER);
    expect(messagesOf(jobId, from).at(-1)!.message).toEqual({ tenantId: principal.tenantId, jobId, finish: true });
    // A batch the job does not have, or of a job that does not exist: nothing done, nothing queued again.
    await runBatch(principal.tenantId, jobId, 7, RUNNER);
    await runBatch(principal.tenantId, randomUUID(), 0, RUNNER);
    expect(messagesOf(jobId, from)).toHaveLength(4);
    expect(await readBatch(principal.tenantId, jobId, 7)).toBeUndefined();
  });

  it('finishes only a planned job whose batches have all ended, and only once', async () => {
    const { principal } = await tenantWithSources({ projects: 1, tasksPerProject: 1 });
    const { jobId } = await startJob(principal, { mode: 'incremental' });
    const { plan, runBatch, finish } = await jobs();
    const { readJobDocument } = await repository();
    await finish(principal.tenantId, jobId, 'runner-1');
    expect((await readJobDocument(principal.tenantId, jobId))!.status).toBe('Queued');
    await plan(principal.tenantId, jobId);
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    await finish(principal.tenantId, jobId, 'runner-1');
    expect((await readJobDocument(principal.tenantId, jobId))!.status).toBe('Running');
    await runBatch(principal.tenantId, jobId, 1, RUNNER);
    await finish(principal.tenantId, jobId, 'runner-1');
    const done = (await readJobDocument(principal.tenantId, jobId))!;
    expect(done.status).toBe('Succeeded');
    await finish(principal.tenantId, jobId, 'runner-2');
    expect(await readJobDocument(principal.tenantId, jobId)).toEqual(done);
    await finish(principal.tenantId, randomUUID(), 'runner-1');
  });

  it('of a cancelled job does no work: the queued batches embed and write nothing, and the job ends Cancelled', async () => {
    const { principal, jobId, from } = await plannedJobWith({ projects: 2, tasksPerProject: 2 });
    const { requestCancel, readJobDocument } = await repository();
    await requestCancel(principal.tenantId, jobId);
    const before = embeddings.counts.requests;
    await drain(principal.tenantId, jobId, from + 1);
    expect(embeddings.counts.requests).toBe(before);
    expect(await storedChunks(principal.tenantId)).toEqual([]);
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({ status: 'Cancelled', progress: { batches: 2, batchesDone: 2 } });
    const nothing = { sources: 0, chunks: 0, written: 0, unchanged: 0, deleted: 0 };
    expect((await (await batches()).readBatch(principal.tenantId, jobId, 0))!).toMatchObject({ status: 'Done', counts: nothing });
  });

  it('of a job cancelled before its planning plans nothing', async () => {
    const { principal } = await tenantWithSources({ projects: 1, tasksPerProject: 1 });
    const { jobId, from } = await startJob(principal, { mode: 'incremental' });
    await (await repository()).requestCancel(principal.tenantId, jobId);
    await (await jobs()).plan(principal.tenantId, jobId);
    expect(messagesOf(jobId, from)).toHaveLength(1);
  });

  it('sends a throttled batch back to the queue for the time asked, and embeds nothing twice', async () => {
    const { principal, jobId, from } = await plannedJobWith({ projects: 1, tasksPerProject: 0, longDescription: true });
    const { runBatch } = await jobs();
    const { readBatch } = await batches();
    embeddings.failNext(1, 429, 7);
    const before = embeddings.counts.inputs;
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    expect(messagesOf(jobId, from).at(-1)).toEqual({ message: { tenantId: principal.tenantId, jobId, batch: 0 }, delaySeconds: 7 });
    expect((await readBatch(principal.tenantId, jobId, 0))!.status).toBe('Planned');
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    const chunks = await storedChunks(principal.tenantId);
    expect(embeddings.counts.inputs - before).toBe(chunks.length);
    expect((await readBatch(principal.tenantId, jobId, 0))!.counts).toMatchObject({ written: chunks.length, chunks: chunks.length });
  });

  it('leaves a batch another run holds: nothing embedded, its message back within 5 s; the holder then runs it once', async () => {
    const { principal, jobId, from } = await plannedJobWith({ projects: 1, tasksPerProject: 0, longDescription: true });
    const { runBatch } = await jobs();
    const { holdBatch, readBatch, releaseBatch } = await batches();
    expect(await holdBatch(principal.tenantId, jobId, 0, 'first-delivery', 20_000)).toMatchObject({ held: { hold: { runner: 'first-delivery' } } });
    const before = embeddings.counts.requests;
    const queuedBefore = messagesOf(jobId, from).length;
    await runBatch(principal.tenantId, jobId, 0, 'second-delivery');
    expect(embeddings.counts.requests).toBe(before);
    expect((await readBatch(principal.tenantId, jobId, 0))!).toMatchObject({ status: 'Planned', hold: { runner: 'first-delivery' } });
    const back = messagesOf(jobId, from).slice(queuedBefore);
    expect(back).toHaveLength(1);
    expect(back[0]!.message).toEqual({ tenantId: principal.tenantId, jobId, batch: 0 });
    expect(back[0]!.delaySeconds).toBeGreaterThanOrEqual(1);
    expect(back[0]!.delaySeconds).toBeLessThanOrEqual(5);
    // The holder's own run goes on; a hold that lapsed or was let go is taken at once.
    await runBatch(principal.tenantId, jobId, 0, 'first-delivery');
    expect((await readBatch(principal.tenantId, jobId, 0))!).toMatchObject({ status: 'Done', hold: null });
    const chunks = await storedChunks(principal.tenantId);
    expect(embeddings.counts.inputs).toBeGreaterThanOrEqual(chunks.length);
    await releaseBatch(principal.tenantId, jobId, 0, 'first-delivery');
    expect((await holdBatch(principal.tenantId, jobId, 0, 'third-delivery', 20_000)) as object).toEqual({ done: true });
  });

  it('lets its batch go when its run fails, so that the next delivery takes it at once', async () => {
    const { principal, jobId } = await plannedJobWith({ projects: 1, tasksPerProject: 0 });
    const { runBatch } = await jobs();
    const { holdBatch, readBatch } = await batches();
    embeddings.failNext(1, 400);
    await expect(runBatch(principal.tenantId, jobId, 0, 'failing-delivery')).rejects.toThrow();
    expect((await readBatch(principal.tenantId, jobId, 0))!).toMatchObject({ status: 'Planned', hold: null });
    expect(await holdBatch(principal.tenantId, jobId, 0, 'next-delivery', 20_000)).toMatchObject({ held: { hold: { runner: 'next-delivery' } } });
    expect(await holdBatch(principal.tenantId, jobId, 0, 'another-delivery', 20_000)).toMatchObject({ busyUntil: expect.any(Number) });
    expect(await holdBatch(principal.tenantId, jobId, 0, 'another-delivery', 20_000)).not.toHaveProperty('held');
  });

  it('sends a batch another run holds for a short while back for the rest of that hold only', async () => {
    const { principal, jobId, from } = await plannedJobWith({ projects: 1, tasksPerProject: 0 });
    const { runBatch } = await jobs();
    const { holdBatch } = await batches();
    await holdBatch(principal.tenantId, jobId, 0, 'first-delivery', 3_000);
    await runBatch(principal.tenantId, jobId, 0, 'second-delivery');
    const back = messagesOf(jobId, from).at(-1)!;
    expect(back.message).toEqual({ tenantId: principal.tenantId, jobId, batch: 0 });
    // The hold has at most 3 s left (and a test this slow would be slower than any run here).
    expect(back.delaySeconds).toBeGreaterThanOrEqual(2);
    expect(back.delaySeconds).toBeLessThanOrEqual(3);
  });

  it('renews the hold of its batch while it works, and stops renewing when its run ends', async () => {
    const { principal, jobId } = await plannedJobWith({ projects: 1, tasksPerProject: 0 });
    const { runBatch } = await jobs();
    const { readBatch } = await batches();
    const holdUntil = async () => Date.parse((await readBatch(principal.tenantId, jobId, 0))!.hold!.until);
    // The embeddings API takes its time: the run holds its batch meanwhile.
    const embedding = gate();
    embeddingsTurns.push(() => embedding.pass().then(() => undefined));
    // Only the renewal's timer is the test's to move; the store and the clock keep real time.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const run = runBatch(principal.tenantId, jobId, 0, 'slow-delivery');
      await embedding.reached;
      const taken = await holdUntil();
      // A quarter of the 20 s hold.
      vi.advanceTimersByTime(5_000);
      await vi.waitFor(async () => expect(await holdUntil()).toBeGreaterThan(taken), { timeout: 5_000, interval: 20 });
      embedding.release();
      await run;
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    expect(await readBatch(principal.tenantId, jobId, 0)).toMatchObject({ status: 'Done', hold: null });
  });

  it('run again after a crash that came after its writes counts the chunks this job wrote, and embeds none again', async () => {
    const { principal, jobId } = await plannedJobWith({ projects: 1, tasksPerProject: 0, longDescription: true });
    const { runBatch } = await jobs();
    const { readBatch } = await batches();
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    const done = (await readBatch(principal.tenantId, jobId, 0))!;
    expect(done.counts!.written).toBeGreaterThan(1);
    // The run was cut off after writing its chunks, before recording its counts.
    const batchDocument = embedded.direct().item(done.id, principal.tenantId);
    await batchDocument.replace({ ...done, status: 'Planned', counts: null, hold: null });
    const before = embeddings.counts.inputs;
    await runBatch(principal.tenantId, jobId, 0, 'next-delivery');
    expect(embeddings.counts.inputs).toBe(before);
    expect((await readBatch(principal.tenantId, jobId, 0))!).toMatchObject({ status: 'Done', counts: done.counts });
  });

  it('run again after a crash that came after its removals counts them once', async () => {
    const { principal, projectIds } = await tenantWithSources({ projects: 1, tasksPerProject: 0, longDescription: true });
    const first = await runJob(principal, { mode: 'incremental' });
    const longChunks = first.job.counts!.chunks;
    expect(longChunks).toBeGreaterThan(1);
    await (await projectsRepository()).updateProject(principal.tenantId, projectIds[0]!, { description: 'Short now.' }, undefined);
    const { jobId } = await plannedJob(principal);
    const { runBatch } = await jobs();
    const { readBatch } = await batches();
    // The run removes the chunks the shortened project no longer makes, and is cut off before recording its counts.
    beforeRequest(
      embedded.store,
      (record) => record.method === 'PUT' && record.path.endsWith(`/docs/${jobId}-b0`) && record.body.includes('"status":"Done"'),
      () => Promise.resolve(STORE_FAILURE),
    );
    await expect(runBatch(principal.tenantId, jobId, 0, RUNNER)).rejects.toThrow();
    expect(await storedChunks(principal.tenantId)).toHaveLength(1);
    expect((await readBatch(principal.tenantId, jobId, 0))!).toMatchObject({ status: 'Planned', staleFound: longChunks - 1 });
    // Its message again (the run's own hold, so that the test need not wait for it to lapse).
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    expect((await readBatch(principal.tenantId, jobId, 0))!.counts).toEqual({ sources: 1, chunks: 1, written: 1, unchanged: 0, deleted: longChunks - 1 });
  });

  it.each([
    ['throttled', () => Promise.resolve({ throttleSeconds: 7 }), 1],
    ['cut off by an embeddings API that stays unavailable', () => Promise.resolve({ unavailable: true as const }), 6],
  ] as const)('%s part way keeps what was embedded, and its next run embeds only the rest', async (_cut, failure, turns) => {
    // One chunk a task: the tasks' batch embeds in two requests, 16 chunks and then 4.
    const { principal, jobId, from } = await plannedJobWith({ projects: 1, tasksPerProject: 20 });
    const { runBatch } = await jobs();
    const { readBatch } = await batches();
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    const before = embeddings.counts.inputs;
    embeddingsTurns.push(() => Promise.resolve(undefined), ...Array.from({ length: turns }, () => failure));
    if (turns === 1) {
      await runBatch(principal.tenantId, jobId, 1, RUNNER);
      expect(messagesOf(jobId, from).at(-1)).toEqual({ message: { tenantId: principal.tenantId, jobId, batch: 1 }, delaySeconds: 7 });
    } else {
      // Every attempt of the second request fails: the run fails, for the queue to deliver the batch again.
      await expect(runBatch(principal.tenantId, jobId, 1, RUNNER)).rejects.toThrow(/Gave up after attempt 6/);
    }
    const taskChunks = async () => (await storedChunks(principal.tenantId)).filter((chunk) => chunk.sourceId.startsWith('TSK'));
    expect((await taskChunks()).filter((chunk) => chunk.hasEmbedding)).toHaveLength(16);
    expect((await readBatch(principal.tenantId, jobId, 1))!.status).toBe('Planned');
    await runBatch(principal.tenantId, jobId, 1, RUNNER);
    expect(embeddings.counts.inputs - before).toBe(20);
    expect(await taskChunks()).toHaveLength(20);
    expect((await readBatch(principal.tenantId, jobId, 1))!.counts).toEqual({ sources: 20, chunks: 20, written: 20, unchanged: 0, deleted: 0 });
  });

  it('planned by two deliveries at once plans each batch once, and ends with exact counts', async () => {
    const { principal, jobId, from } = await startedJobWith({ projects: 2, tasksPerProject: 2 });
    const { plan } = await jobs();
    const { readJobDocument } = await repository();
    const { readBatch } = await batches();
    // The second delivery plans the whole job while the first is about to make its first batch.
    beforeFirstBatch(jobId, () => plan(principal.tenantId, jobId));
    await plan(principal.tenantId, jobId);
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({ planned: true, progress: { sources: 6, batches: 2 } });
    expect(await readBatch(principal.tenantId, jobId, 2)).toBeUndefined();
    await drain(principal.tenantId, jobId, from);
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({
      status: 'Succeeded',
      progress: { sources: 6, batches: 2, batchesDone: 2 },
      counts: { sources: 6, written: 6 },
    });
  });

  it('planned by two deliveries at once: the one behind leaves the planning to the one ahead, still under way', async () => {
    const { principal, jobId } = await startedJobWith({ projects: 2, tasksPerProject: 2 });
    const { plan } = await jobs();
    const { readJobDocument } = await repository();
    const ahead = gate();
    let second: Promise<void> | undefined;
    // As the first delivery is about to make the first batch, a second one plans it, and waits before the second batch.
    beforeFirstBatch(jobId, async () => {
      beforeRequest(
        embedded.store,
        (record) => record.method === 'POST' && record.body.includes(`"${jobId}-b1"`),
        () => ahead.pass(),
      );
      second = plan(principal.tenantId, jobId);
      await ahead.reached;
    });
    await plan(principal.tenantId, jobId);
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({ planned: false, progress: { sources: 2, batches: 1 } });
    ahead.release();
    await second;
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({ planned: true, progress: { sources: 6, batches: 2 } });
  });

  it('cancelled while it is planned stops planning, counts the batches planned so far, and ends Cancelled once they have run', async () => {
    const { principal, jobId, from } = await startedJobWith({ projects: 2, tasksPerProject: 2 });
    const { plan } = await jobs();
    const { readJobDocument, requestCancel } = await repository();
    beforeFirstBatch(jobId, () => requestCancel(principal.tenantId, jobId));
    await plan(principal.tenantId, jobId);
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({ status: 'Running', planned: true, progress: { sources: 2, batches: 1 } });
    await drain(principal.tenantId, jobId, from);
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({ status: 'Cancelled', progress: { batches: 1, batchesDone: 1 } });
  });

  it('planned by a run that finds its first batch made by another counts that batch as made, though the sources changed between', async () => {
    const { principal, projectIds, jobId } = await startedJobWith({ projects: 2, tasksPerProject: 0 });
    const { plan } = await jobs();
    const { readJobDocument } = await repository();
    const { planBatch, readBatch } = await batches();
    const { createProject } = await projectsRepository();
    // After this run read its page, a project is created, and another run (that then crashed) made the batch of the page it read.
    beforeFirstBatch(jobId, async () => {
      const { resource } = await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Project late' }, undefined);
      const page = { kind: 'project' as const, sourceIds: [...projectIds, resource.id], next: { kind: 'task' as const, continuation: undefined } };
      await planBatch(principal.tenantId, jobId, 0, page);
    });
    await plan(principal.tenantId, jobId);
    expect((await readBatch(principal.tenantId, jobId, 0))!.sourceIds).toHaveLength(3);
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({ planned: true, progress: { sources: 3, batches: 1 } });
  });

  it('delivered again after its last write failed plans each batch once', async () => {
    const { principal, jobId } = await startedJobWith({ projects: 2, tasksPerProject: 2 });
    const { plan } = await jobs();
    const { readJobDocument } = await repository();
    const { readBatch } = await batches();
    beforeRequest(
      embedded.store,
      (record) => isBatch(record) && record.body.includes(`"id":"${jobId}"`) && record.body.includes('"planned":true'),
      async () => STORE_FAILURE,
    );
    await expect(plan(principal.tenantId, jobId)).rejects.toThrow();
    await plan(principal.tenantId, jobId);
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({ planned: true, planCursor: null, progress: { sources: 6, batches: 2 } });
    expect(await readBatch(principal.tenantId, jobId, 2)).toBeUndefined();
  });

  it('of a job that ends while it is planned plans no more', async () => {
    const { principal } = await tenantWithSources({ projects: 1, tasksPerProject: 1 });
    const { jobId, from } = await startJob(principal, { mode: 'incremental' });
    const { plan } = await jobs();
    const { finishJob, readJobDocument } = await repository();
    const { readBatch } = await batches();
    // The queue gives up on the job (its last retry failed) as the planning makes its first batch.
    beforeFirstBatch(jobId, () => finishJob(principal.tenantId, jobId, { error: 'Gave up.' }));
    await plan(principal.tenantId, jobId);
    expect(messagesOf(jobId, from).map((entry) => entry.message)).toEqual([
      { tenantId: principal.tenantId, jobId },
      { tenantId: principal.tenantId, jobId, batch: 0 },
    ]);
    expect(await readBatch(principal.tenantId, jobId, 1)).toBeUndefined();
    expect((await readJobDocument(principal.tenantId, jobId))!.status).toBe('Failed');
  });

  it('of a job that ends while a batch runs ends quietly, and hands no finishing over', async () => {
    const { principal, jobId, from } = await plannedJobWith({ projects: 1, tasksPerProject: 0 });
    const { runBatch } = await jobs();
    const { finishJob, readJobDocument } = await repository();
    beforeRequest(
      embedded.store,
      (record) => record.method === 'PUT' && record.path.endsWith(`/docs/${jobId}-b0`) && record.body.includes('"status":"Done"'),
      () => finishJob(principal.tenantId, jobId, { error: 'Gave up.' }),
    );
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    expect(messagesOf(jobId, from)).toHaveLength(2);
    expect(await readJobDocument(principal.tenantId, jobId)).toMatchObject({ status: 'Failed', progress: { batchesDone: 0 } });
  });

  it('of a job that has ended does nothing, though its batches were still queued', async () => {
    const { principal, jobId, from } = await plannedJobWith({ projects: 1, tasksPerProject: 1 });
    const { runBatch } = await jobs();
    const { finishJob } = await repository();
    const { readBatch } = await batches();
    // The queue gave up on the job (its last retry failed) while its batches were queued.
    await finishJob(principal.tenantId, jobId, { error: 'Gave up.' });
    const before = embeddings.counts.requests;
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    expect(embeddings.counts.requests).toBe(before);
    expect((await readBatch(principal.tenantId, jobId, 0))!.status).toBe('Planned');
    expect(messagesOf(jobId, from)).toHaveLength(3);
  });

  it('passes on a failure of the embeddings API that is not throttling, writing nothing', async () => {
    const { principal, jobId } = await plannedJobWith({ projects: 1, tasksPerProject: 0 });
    const { runBatch } = await jobs();
    embeddings.failNext(1, 400);
    await expect(runBatch(principal.tenantId, jobId, 0, RUNNER)).rejects.toThrow(/refused the request with 400/);
    expect(await storedChunks(principal.tenantId)).toEqual([]);
  });

  it('rewrites nothing when a batch of a full rebuild is delivered again', async () => {
    const { principal, jobId } = await plannedJobWith({ projects: 2, tasksPerProject: 0 }, { mode: 'full' });
    const { runBatch } = await jobs();
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    const index = embedded.direct('rag-index');
    const etags = async () =>
      (
        await index.items
          .query<{ id: string; _etag: string }>({
            query: 'SELECT c.id, c._etag FROM c WHERE c.tenantId = @tenant',
            parameters: [{ name: '@tenant', value: principal.tenantId }],
          })
          .fetchAll()
      ).resources;
    const written = await etags();
    expect(written.length).toBeGreaterThan(0);
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    expect(await etags()).toEqual(written);
  });

  it('leaves the finishing to the run that holds it', async () => {
    const { principal, jobId } = await plannedJobWith({ projects: 1, tasksPerProject: 0 });
    const { runBatch, finish } = await jobs();
    const { startFinishing, readJobDocument } = await repository();
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    expect(await startFinishing(principal.tenantId, jobId, 'runner-0', 60_000)).toBeDefined();
    await finish(principal.tenantId, jobId, 'runner-1');
    expect((await readJobDocument(principal.tenantId, jobId))!.status).toBe('Running');
    await finish(principal.tenantId, jobId, 'runner-0');
    expect((await readJobDocument(principal.tenantId, jobId))!.status).toBe('Succeeded');
  });

  it('finishes the removals a run cut off had recorded, counting them once', async () => {
    const { principal, taskIds } = await tenantWithSources({ projects: 1, tasksPerProject: 2 });
    await runJob(principal, { mode: 'incremental' });
    const gone = (await storedChunks(principal.tenantId)).filter((chunk) => chunk.sourceId === taskIds[0]);
    expect(gone.length).toBeGreaterThan(0);
    const { jobId } = await plannedJob(principal);
    const { runBatch, finish } = await jobs();
    const { startFinishing, recordSweep, readJobDocument } = await repository();
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    await runBatch(principal.tenantId, jobId, 1, RUNNER);
    // A run that took the finishing recorded these removals, counted 2 before, and was cut off.
    await startFinishing(principal.tenantId, jobId, 'runner-1', 60_000);
    const chunkPlaces = gone.map(({ id, projectId }) => ({ id, projectId }));
    await recordSweep(principal.tenantId, jobId, { deleted: 2, pending: chunkPlaces }, 60_000);
    await finish(principal.tenantId, jobId, 'runner-1');
    const job = (await readJobDocument(principal.tenantId, jobId))!;
    expect(job.status).toBe('Succeeded');
    expect(job.counts!.deleted).toBe(2 + gone.length);
    expect((await storedChunks(principal.tenantId)).some((chunk) => chunk.sourceId === taskIds[0])).toBe(false);
  });
});

describe('the finishing', () => {
  it('cut off as it removes, and again at its last write, ends when run again with each removal counted once', async () => {
    const { principal, taskIds } = await tenantWithSources({ projects: 1, tasksPerProject: 2 });
    await runJob(principal, { mode: 'incremental' });
    const gone = (await storedChunks(principal.tenantId)).filter((chunk) => chunk.sourceId === taskIds[0]);
    expect(gone.length).toBeGreaterThan(0);
    await (await tasksRepository()).deleteTask(principal.tenantId, taskIds[0]!, undefined);
    const { jobId } = await plannedJob(principal);
    const { runBatch, finish } = await jobs();
    const { readJobDocument } = await repository();
    await runBatch(principal.tenantId, jobId, 0, RUNNER);
    await runBatch(principal.tenantId, jobId, 1, RUNNER);

    beforeRequest(
      embedded.store,
      (record) => record.path.includes('/colls/rag-index/') && record.body.includes('"operationType":"Delete"'),
      () => Promise.resolve(STORE_FAILURE),
    );
    await expect(finish(principal.tenantId, jobId, 'runner-1')).rejects.toThrow();
    expect((await readJobDocument(principal.tenantId, jobId))!.sweep).toMatchObject({
      deleted: 0,
      pending: gone.map(({ id, projectId }) => ({ id, projectId })),
    });

    beforeRequest(
      embedded.store,
      (record) => record.path.includes('/colls/tenant-data/') && record.body.includes('"status":"Succeeded"'),
      () => Promise.resolve(STORE_FAILURE),
    );
    await expect(finish(principal.tenantId, jobId, 'runner-1')).rejects.toThrow();
    expect((await readJobDocument(principal.tenantId, jobId))!).toMatchObject({ status: 'Running', sweep: { deleted: gone.length, pending: [] } });
    expect((await storedChunks(principal.tenantId)).some((chunk) => chunk.sourceId === taskIds[0])).toBe(false);

    await finish(principal.tenantId, jobId, 'runner-1');
    const job = (await readJobDocument(principal.tenantId, jobId))!;
    expect(job.status).toBe('Succeeded');
    expect(job.counts).toMatchObject({ deleted: gone.length, sources: 2 });
  });
});

describe('without embeddings configured', () => {
  it('indexes chunks without vectors, and once embeddings are configured embeds each of them', async () => {
    const principal = adminCaller();
    const endpoint = process.env.EMBEDDINGS_ENDPOINT;
    delete process.env.EMBEDDINGS_ENDPOINT;
    try {
      vi.resetModules();
      await tenantWithSources({ projects: 1, tasksPerProject: 1 }, principal);
      const before = embeddings.counts.requests;
      const { job } = await runJob(principal, { mode: 'incremental' });
      expect(embeddings.counts.requests).toBe(before);
      const chunks = await storedChunks(principal.tenantId);
      expect(job.counts).toMatchObject({ written: chunks.length });
      expect(chunks.every((chunk) => !chunk.hasEmbedding)).toBe(true);
      // Chunks without vectors are what this configuration makes: a run again rewrites none.
      const again = await runJob(principal, { mode: 'incremental' });
      expect(again.job.counts).toMatchObject({ written: 0, unchanged: chunks.length });
    } finally {
      process.env.EMBEDDINGS_ENDPOINT = endpoint;
      vi.resetModules();
    }
    const inputs = embeddings.counts.inputs;
    const { job } = await runJob(principal, { mode: 'incremental' });
    const chunks = await storedChunks(principal.tenantId);
    expect(job.counts).toMatchObject({ written: chunks.length, unchanged: 0 });
    expect(embeddings.counts.inputs - inputs).toBe(chunks.length);
    expect(chunks.every((chunk) => chunk.hasEmbedding)).toBe(true);
  });
});
