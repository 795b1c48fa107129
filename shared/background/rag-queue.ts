/**
 * A RAG index rebuild at any tenant size, as messages on the RAG queue, the first of them put there
 * once the stored job reaches the change feed relay (see dispatch):
 *
 * 1. `{ jobId, tenantId }` plans the job: it pages through the sources in scope (projects, then
 *    tasks), never holding more than a page, and makes each page of at most 500 sources a batch of
 *    its own message. Where it got to is kept, so a restarted planning goes on from there; two runs
 *    of it at once plan each batch once (see plan).
 * 2. `{ jobId, tenantId, batch }` indexes one batch: chunks its sources, embeds the chunks that
 *    changed, writes them and removes the chunks its sources no longer make. Batches run side by
 *    side, on as many instances as the platform gives. A throttling embeddings API sends the batch
 *    back to the queue for the time it asks, with what was embedded already written: no invocation
 *    sleeps, and nothing is embedded twice.
 * 3. `{ jobId, tenantId, finish }`, once every batch has ended, removes the chunks whose source is
 *    gone (comparing the index with the sources a page at a time), counts what the tenant's index
 *    holds, and ends the job. One message's run does it; a second delivery finds it taken and leaves it.
 *
 * Every step can run twice without harm: a batch records its counts once, and the job's counts of
 * what it did are the sum of its batches'. A run cut off part way (a crash, a throttled API) leaves
 * its traces so the next run counts exactly: each chunk names the job that wrote it, and removals are
 * recorded before they are made.
 */
import { embeddingsSettings } from '../settings/read.js';
import { projectSources } from '../data/projects-repository.js';
import {
  chunkPages,
  chunksOfSources,
  deleteChunks,
  indexTotals,
  storedEmbeddings,
  writeChunks,
  type Chunk,
  type ChunkDocument,
  type ChunkPlace,
} from '../data/rag-index-repository.js';
import {
  batchTotals,
  completeBatch,
  holdBatch,
  planBatch,
  recordStaleFound,
  releaseBatch,
  renewHold,
  type RagBatchDocument,
} from '../data/rag-batches-repository.js';
import {
  finishJob,
  finishPlanning,
  markDispatched,
  readJobDocument,
  recordBatchesDone,
  recordPlanning,
  recordSweep,
  startFinishing,
  startRunning,
  type RagJobDocument,
} from '../data/rag-jobs-repository.js';
import { isFinished, planningAt, type PlanCursor, type SourceKind } from '../domain/rag-jobs.js';
import { taskSources } from '../data/tasks-repository.js';
import { enqueueRagWork } from './queues.js';
import type { RagCounts } from '../schemas/rag.js';
import { projectChunks, taskChunks } from '../rag/chunker.js';
import { createEmbedder, EmbeddingsThrottledError, EmbeddingsUnavailableError, type Embedder } from '../rag/embeddings.js';

/** Sources per batch: what one invocation chunks, embeds and writes. */
export const BATCH_SOURCES = 500;
/** Chunks the final step compares with the sources at a time. */
const SWEEP_PAGE = 1_000;
/** How long a finishing run holds the job without a sign of life (one per page of the index) before another may take over. */
const FINISHING_LEASE_MS = 60_000;
/** How long a batch's run holds it without renewing (renewed every quarter of it): a crashed run's batch waits this long. */
const BATCH_HOLD_MS = 20_000;
const NOTHING: RagCounts = { sources: 0, chunks: 0, written: 0, unchanged: 0, deleted: 0 };

let embedder: Embedder | null | undefined;

/** The embeddings client, or null when no endpoint is configured (embeddings are optional). */
function configuredEmbedder(): Embedder | null {
  if (embedder === undefined) {
    const settings = embeddingsSettings();
    embedder = settings ? createEmbedder(settings) : null;
  }
  return embedder;
}

const SOURCES = { project: projectSources, task: taskSources };

const idPage = (kind: SourceKind, job: RagJobDocument, continuation: string | undefined) =>
  SOURCES[kind].idPage(job.tenantId, job.projectIds, BATCH_SOURCES, continuation);

/**
 * Puts a stored job that is still Queued on the RAG queue, for its planning; the change feed shows
 * each stored job to the relay, which calls this. Marked once queued, so a second look leaves it be.
 */
export async function dispatch(job: Pick<RagJobDocument, 'tenantId' | 'id' | 'status' | 'dispatched'>): Promise<void> {
  if (job.status !== 'Queued' || job.dispatched) return;
  await enqueueRagWork({ tenantId: job.tenantId, jobId: job.id });
  await markDispatched(job.tenantId, job.id);
}

/**
 * Plans the job into batches, each put on the queue as soon as it is made. Two runs (a message
 * delivered twice) may plan at once: each step is recorded only from where the planning stands, and
 * the run that finds it moved on leaves the rest to the other.
 */
export async function plan(tenantId: string, jobId: string): Promise<void> {
  let job = await startRunning(tenantId, jobId);
  let from = job && planningAt(job);
  while (job && from && !job.cancelRequestedAt) {
    job = await recordPlanning(tenantId, jobId, await planPage(job, from));
    from = job && planningAt(job);
  }
  // A cancel stops the planning; the batches planned so far still count.
  if (job && (await finishPlanning(tenantId, jobId))) await afterBatch(tenantId, jobId);
}

/** Makes the page of sources at `from` a batch (none if it is empty): the step from there to where planning goes on. */
async function planPage(job: RagJobDocument, from: PlanCursor) {
  const page = await idPage(from.kind, job, from.continuation);
  const next: PlanCursor | null = page.continuation
    ? { kind: from.kind, continuation: page.continuation }
    : from.kind === 'project'
      ? { kind: 'task', continuation: undefined }
      : null;
  if (page.ids.length === 0) return { from, to: next, sources: 0, batches: 0 };
  // The run that made the batch first decided its page and where planning goes on after it.
  const batch = await planBatch(job.tenantId, job.id, job.progress!.batches, { kind: from.kind, sourceIds: page.ids, next });
  await enqueueRagWork({ tenantId: job.tenantId, jobId: job.id, batch: batch.number });
  return { from, to: batch.next, sources: batch.sourceIds.length, batches: 1 };
}

/**
 * Indexes one batch of a job, unless it ran already, for the run `runner` (one delivery of its
 * message); then looks whether the job is done. While another run holds the batch, its message comes
 * back a little later (at most when that hold would end): the batch is done by then, or still held, or
 * its run is gone and this one takes over.
 */
export async function runBatch(tenantId: string, jobId: string, number: number, runner: string): Promise<void> {
  const job = await readJobDocument(tenantId, jobId);
  if (!job || isFinished(job)) return;
  const claim = await holdBatch(tenantId, jobId, number, runner, BATCH_HOLD_MS);
  if ('missing' in claim) return;
  if ('busyUntil' in claim) {
    const untilFree = Math.min(claim.busyUntil - Date.now(), BATCH_HOLD_MS / 4);
    await enqueueRagWork({ tenantId, jobId, batch: number }, Math.max(1, Math.ceil(untilFree / 1000)));
    return;
  }
  if ('held' in claim) {
    // A cancelled job's batches not started do nothing.
    const counts = job.cancelRequestedAt ? NOTHING : await whileHeld(claim.held, runner, () => indexBatch(job, claim.held));
    if (!counts) return releaseBatch(tenantId, jobId, number, runner);
    await completeBatch(tenantId, jobId, number, counts);
  }
  await afterBatch(tenantId, jobId);
}

/** Runs `work` on a held batch, renewing the hold while it runs, and lets the batch go if it fails. */
async function whileHeld<T>(batch: RagBatchDocument, runner: string, work: () => Promise<T>): Promise<T> {
  const { tenantId, jobId, number } = batch;
  const renewal = setInterval(() => void renewHold(tenantId, jobId, number, runner, BATCH_HOLD_MS).catch(() => undefined), BATCH_HOLD_MS / 4);
  try {
    return await work();
  } catch (error) {
    await releaseBatch(tenantId, jobId, number, runner).catch(() => undefined);
    throw error;
  } finally {
    clearInterval(renewal);
  }
}

/** Progress from the batches that ended; once all of a planned job have, its finishing goes on the queue. */
async function afterBatch(tenantId: string, jobId: string): Promise<void> {
  const { done } = await batchTotals(tenantId, jobId);
  const job = await recordBatchesDone(tenantId, jobId, done);
  if (job?.planned && done >= job.progress!.batches) await enqueueRagWork({ tenantId, jobId, finish: true });
}

/** The sources among these ids (those still there), and their chunks. */
async function chunkedSources(kind: SourceKind, tenantId: string, ids: readonly string[]): Promise<{ sources: number; chunks: Chunk[] }> {
  if (kind === 'project') {
    const projects = await projectSources.byIds(tenantId, ids);
    return { sources: projects.length, chunks: projects.flatMap(projectChunks) };
  }
  const tasks = await taskSources.byIds(tenantId, ids);
  return { sources: tasks.length, chunks: tasks.flatMap(taskChunks) };
}

/**
 * Chunks the batch's sources and brings their chunks in the index in line: the changed or new ones
 * written (every one in a full rebuild), those the sources no longer make removed. Embeddings are
 * computed only for chunks whose content changed. Undefined when the embeddings API throttled: the
 * batch is back on the queue for later, with what was embedded already written. An API that stays
 * unavailable fails the run, also with what was embedded written, for the queue's retry.
 */
async function indexBatch(job: RagJobDocument, batch: RagBatchDocument): Promise<RagCounts | undefined> {
  const { tenantId } = job;
  const [{ sources, chunks: wanted }, stored] = await Promise.all([
    chunkedSources(batch.kind, tenantId, batch.sourceIds),
    chunksOfSources(tenantId, batch.sourceIds),
  ]);
  const storedById = new Map(stored.map((summary) => [summary.id, summary]));
  const embed = configuredEmbedder();
  const changed = wanted.filter((chunk) => {
    const existing = storedById.get(chunk.id);
    // A chunk stored before embeddings were configured counts as changed until it has its vector.
    return existing?.contentHash !== chunk.contentHash || (embed !== null && !existing.hasEmbedding);
  });
  const changedIds = new Set(changed.map((chunk) => chunk.id));
  const toWrite = job.mode === 'full' ? wanted : changed;
  const document = (chunk: Chunk, embedding: number[] | undefined): ChunkDocument => ({
    ...chunk,
    tenantId,
    jobId: job.id,
    ...(embedding ? { embedding } : {}),
  });

  let vectors: number[][] = [];
  if (embed) {
    try {
      vectors = await embed.embed(changed.map((chunk) => chunk.content));
    } catch (error) {
      if (!(error instanceof EmbeddingsThrottledError || error instanceof EmbeddingsUnavailableError)) throw error;
      // Keep what was embedded, so that no run pays for it again; come back when the API says, or when the queue retries.
      await writeChunks(
        tenantId,
        error.done.map((vector, index) => document(changed[index]!, vector)),
      );
      if (error instanceof EmbeddingsUnavailableError) throw error;
      await enqueueRagWork({ tenantId, jobId: job.id, batch: batch.number }, error.retryAfterMs / 1000);
      return undefined;
    }
  }
  const fresh = new Map(changed.map((chunk, index) => [chunk.id, vectors[index]]));
  const carried = embed
    ? await storedEmbeddings(
        tenantId,
        toWrite.filter((chunk) => !changedIds.has(chunk.id)).map((chunk) => chunk.id),
      )
    : new Map<string, number[]>();
  await writeChunks(
    tenantId,
    toWrite.map((chunk) => document(chunk, fresh.get(chunk.id) ?? carried.get(chunk.id))),
  );
  const wantedIds = new Set(wanted.map((chunk) => chunk.id));
  const stale = stored.filter((summary) => !wantedIds.has(summary.id));
  // An earlier run of this batch (throttled, or cut off by a crash) may have removed some already.
  const deleted = Math.max(stale.length, batch.staleFound);
  if (stale.length > 0) {
    await recordStaleFound(tenantId, job.id, batch.number, deleted);
    await deleteChunks(tenantId, stale);
  }
  // A chunk an earlier run of this job wrote is unchanged now, but this job wrote it (a chunk not changed is a stored one).
  const written = wanted.filter((chunk) => job.mode === 'full' || changedIds.has(chunk.id) || storedById.get(chunk.id)!.jobId === job.id).length;
  return { sources, chunks: wanted.length, written, unchanged: wanted.length - written, deleted };
}

/** Whether each source of these chunks still exists, as the batches saw sources. */
async function existingSources(tenantId: string, chunks: readonly Chunk[] | readonly { sourceType: SourceKind; sourceId: string }[]): Promise<Set<string>> {
  const ids = (kind: SourceKind) => [...new Set(chunks.filter((chunk) => chunk.sourceType === kind).map((chunk) => chunk.sourceId))];
  const [projects, tasks] = await Promise.all([projectSources.byIds(tenantId, ids('project')), taskSources.byIds(tenantId, ids('task'))]);
  return new Set([...projects, ...tasks].map((source) => source.id));
}

/**
 * Once every batch has ended: removes the chunks in scope whose source is gone, a page at a time,
 * and ends the job with the sum of its batches' counts of what it did, and the sources and chunks the
 * tenant's index holds afterwards, counted by Cosmos (or as Cancelled, if that was asked).
 */
export async function finish(tenantId: string, jobId: string, runner: string): Promise<void> {
  const ready = await readJobDocument(tenantId, jobId);
  if (!ready?.planned || isFinished(ready)) return;
  const totals = await batchTotals(tenantId, jobId);
  if (totals.done < ready.progress!.batches) return;
  const job = await startFinishing(tenantId, jobId, runner, FINISHING_LEASE_MS);
  if (!job) return;
  if (job.cancelRequestedAt) return finishJob(tenantId, jobId, { cancelled: true });
  // Removals a run cut off by a crash had recorded are counted once, and made sure of.
  let { deleted } = job.sweep ?? { deleted: 0 };
  const remove = async (gone: ChunkPlace[]) => {
    await recordSweep(tenantId, jobId, { deleted, pending: gone }, FINISHING_LEASE_MS);
    await deleteChunks(tenantId, gone);
    deleted += gone.length;
  };
  if (job.sweep?.pending.length) await remove(job.sweep.pending);
  for await (const page of chunkPages(tenantId, job.projectIds, SWEEP_PAGE)) {
    const existing = await existingSources(tenantId, page);
    const gone = page.filter((chunk) => !existing.has(chunk.sourceId)).map(({ id, projectId }) => ({ id, projectId }));
    if (gone.length > 0) await remove(gone);
    await recordSweep(tenantId, jobId, { deleted, pending: [] }, FINISHING_LEASE_MS);
  }
  // What the tenant's index holds now, whatever the job's scope; what the job did is the sum of its batches'.
  const { sources, chunks } = await indexTotals(tenantId);
  await finishJob(tenantId, jobId, { counts: { ...totals.counts, sources, chunks, deleted: totals.counts.deleted + deleted } });
}
