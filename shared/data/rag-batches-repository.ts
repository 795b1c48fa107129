/**
 * A RAG job's batches, in the tenant's partition. Each batch is a document that records, once, what
 * its run did: a batch run twice counts once. A run holds its batch while it works, so that a second
 * delivery of the batch (a duplicate message, or a queue lease renewed too late) waits instead of
 * embedding the same chunks again; a hold not renewed ends, so a crashed run's batch is taken over.
 */
import type { RagCounts } from '../schemas/rag.js';
import { cosmosStatus } from './cosmos.js';
import { heldByOther, type PlanCursor, type SourceKind } from '../domain/rag-jobs.js';
import { asJson, FULL_SCAN_PAGE, readDocument, tenantData, type StoredDocument } from './tenant-data.js';

export interface RagBatchDocument extends StoredDocument {
  type: 'ragBatch';
  jobId: string;
  number: number;
  kind: SourceKind;
  sourceIds: string[];
  /** Where planning goes on after this batch's page. */
  next: PlanCursor | null;
  status: 'Planned' | 'Done';
  /** Chunks of its sources the batch found to remove, recorded before it removes them: a run again after a crash finds fewer. */
  staleFound: number;
  counts: RagCounts | null;
  lastError: string | null;
  /** The run working on the batch, and until when it holds it unless it renews the hold. */
  hold?: { runner: string; until: string } | null;
}

const batchId = (jobId: string, number: number) => `${jobId}-b${number}`;

/**
 * A batch of the job, made once: a second planning run finds it made and keeps it as it is, its page
 * and where planning goes on after it (should the sources have changed between the two runs' reads).
 */
export async function planBatch(
  tenantId: string,
  jobId: string,
  number: number,
  page: Pick<RagBatchDocument, 'kind' | 'sourceIds' | 'next'>,
): Promise<RagBatchDocument> {
  const batch: Omit<RagBatchDocument, '_etag'> = {
    id: batchId(jobId, number),
    tenantId,
    type: 'ragBatch',
    jobId,
    number,
    ...page,
    status: 'Planned',
    staleFound: 0,
    counts: null,
    lastError: null,
  };
  try {
    const { resource } = await (await tenantData()).items.create(batch);
    return resource as unknown as RagBatchDocument;
  } catch (error) {
    if (cosmosStatus(error) !== 409) throw error;
    return (await readBatch(tenantId, jobId, number))!;
  }
}

export function readBatch(tenantId: string, jobId: string, number: number): Promise<RagBatchDocument | undefined> {
  return readDocument<RagBatchDocument>(tenantId, batchId(jobId, number), 'ragBatch');
}

/**
 * Writes `change(current)` over the batch as last read, reading again when another write came first;
 * nothing when `change` gives undefined. Gives what was written, or undefined.
 */
async function changeBatch(
  tenantId: string,
  jobId: string,
  number: number,
  change: (current: RagBatchDocument) => RagBatchDocument | undefined,
): Promise<RagBatchDocument | undefined> {
  const documents = await tenantData();
  for (;;) {
    const current = await readBatch(tenantId, jobId, number);
    const next = current && change(current);
    if (!next) return undefined;
    try {
      const { resource } = await documents.item(current.id, tenantId).replace(asJson(next), { accessCondition: { type: 'IfMatch', condition: current._etag } });
      return resource as unknown as RagBatchDocument;
    } catch (error) {
      // 412: changed meanwhile (an error recorded, another run): read again.
      if (cosmosStatus(error) !== 412) throw error;
    }
  }
}

const holdFor = (runner: string, holdMs: number) => ({ runner, until: new Date(Date.now() + holdMs).toISOString() });

export type BatchClaim = { held: RagBatchDocument } | { done: true } | { busyUntil: number } | { missing: true };

/**
 * Takes the batch for the run `runner` for `holdMs`: `held` when it may work on it, `done` when a run
 * recorded it already, `busyUntil` when another run holds it (until then, unless renewed).
 */
export async function holdBatch(tenantId: string, jobId: string, number: number, runner: string, holdMs: number): Promise<BatchClaim> {
  let claim: BatchClaim = { missing: true };
  const held = await changeBatch(tenantId, jobId, number, (current) => {
    if (current.status === 'Done') claim = { done: true };
    else if (heldByOther(current.hold, runner, Date.now())) claim = { busyUntil: Date.parse(current.hold!.until) };
    else return { ...current, hold: holdFor(runner, holdMs) };
    return undefined;
  });
  return held ? { held } : claim;
}

/** Keeps the batch for `runner` another `holdMs`; false when the run no longer holds it (a batch recorded Done is held by none). */
export async function renewHold(tenantId: string, jobId: string, number: number, runner: string, holdMs: number): Promise<boolean> {
  const renewed = await changeBatch(tenantId, jobId, number, (current) =>
    current.hold?.runner === runner ? { ...current, hold: holdFor(runner, holdMs) } : undefined,
  );
  return renewed !== undefined;
}

/** Lets the batch go, for its next delivery to take at once (a run that failed or was throttled). */
export async function releaseBatch(tenantId: string, jobId: string, number: number, runner: string): Promise<void> {
  await changeBatch(tenantId, jobId, number, (current) => (current.hold?.runner === runner ? { ...current, hold: null } : undefined));
}

/**
 * The batch's run ended with these counts: recorded once, whatever runs it twice (a second run finds
 * it Done, and records nothing). False when another run recorded first.
 */
export async function completeBatch(tenantId: string, jobId: string, number: number, counts: RagCounts): Promise<boolean> {
  const completed = await changeBatch(tenantId, jobId, number, (current) =>
    current.status === 'Done' ? undefined : { ...current, status: 'Done', counts, hold: null },
  );
  return completed !== undefined;
}

/** The chunks of its sources a batch is about to remove. */
export async function recordStaleFound(tenantId: string, jobId: string, number: number, staleFound: number): Promise<void> {
  await (await tenantData()).item(batchId(jobId, number), tenantId).patch([{ op: 'set', path: '/staleFound', value: staleFound }]);
}

export async function recordBatchError(tenantId: string, jobId: string, number: number, message: string): Promise<void> {
  await (
    await tenantData()
  )
    .item(batchId(jobId, number), tenantId)
    .patch([{ op: 'set', path: '/lastError', value: message.slice(0, 1000) }])
    .catch((error: unknown) => {
      if (cosmosStatus(error) !== 404) throw error;
    });
}

/** How many of the job's batches ended, and the sum of their counts. */
export async function batchTotals(tenantId: string, jobId: string): Promise<{ done: number; counts: RagCounts }> {
  const query = {
    query: "SELECT c.counts FROM c WHERE c.tenantId = @tenantId AND c.type = 'ragBatch' AND c.jobId = @jobId AND c.status = 'Done'",
    parameters: [
      { name: '@tenantId', value: tenantId },
      { name: '@jobId', value: jobId },
    ],
  };
  const counts: RagCounts = { sources: 0, chunks: 0, written: 0, unchanged: 0, deleted: 0 };
  let done = 0;
  const pages = (await tenantData()).items.query<{ counts: RagCounts }>(query, { partitionKey: tenantId, maxItemCount: FULL_SCAN_PAGE });
  while (pages.hasMoreResults()) {
    for (const batch of (await pages.fetchNext()).resources) {
      done += 1;
      for (const name of Object.keys(counts) as (keyof RagCounts)[]) counts[name] += batch.counts[name];
    }
  }
  return { done, counts };
}
