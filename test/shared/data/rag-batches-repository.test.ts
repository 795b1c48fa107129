/**
 * A RAG job's batches (shared/data/rag-batches-repository.ts) against the embedded Cosmos store of the
 * local stack, started by this file, through a proxy (test/support/cosmos-proxy.ts) that can fail a
 * request or hold it while the test writes first: the store's failures and the clashes of two runs
 * happen when the test says.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RagCounts } from '../../../shared/schemas/rag.js';
import { type CosmosRequestRecord, STORE_FAILURE } from '../../support/cosmos-proxy.js';
import { embeddedStoreForTests } from '../../support/embedded-store.js';

const embedded = embeddedStoreForTests();

const batches = () => import('../../../shared/data/rag-batches-repository.js');

/** A batch of a job of a tenant of its own, as its planning makes it. */
async function plannedBatch() {
  const tenantId = randomUUID();
  const jobId = randomUUID();
  await (await batches()).planBatch(tenantId, jobId, 0, { kind: 'project', sourceIds: ['PRJ-1', 'PRJ-2'], next: { kind: 'task', continuation: undefined } });
  return { tenantId, jobId, id: `${jobId}-b0` };
}

/** The batch as stored, read past the proxy. */
async function stored(tenantId: string, id: string) {
  const { resource } = await embedded.direct().item(id, tenantId).read<Record<string, unknown>>();
  return resource;
}

const COUNTS: RagCounts = { sources: 2, chunks: 5, written: 5, unchanged: 0, deleted: 0 };
const isWriteOf = (id: string, method: string) => (record: CosmosRequestRecord) => record.method === method && record.path.endsWith(`/docs/${id}`);

describe("a batch's hold", () => {
  it('renewed, keeps a second delivery away past the first term; a run whose hold lapsed and was taken is told so', async () => {
    const { holdBatch, renewHold, releaseBatch } = await batches();
    const { tenantId, jobId, id } = await plannedBatch();
    // A hold of no time at all: its first term is over as soon as it is taken.
    expect(await holdBatch(tenantId, jobId, 0, 'first', 0)).toHaveProperty('held');
    expect(await renewHold(tenantId, jobId, 0, 'first', 20_000)).toBe(true);
    const renewed = (await stored(tenantId, id))!.hold as { runner: string; until: string };
    expect(renewed.runner).toBe('first');
    expect(Date.parse(renewed.until)).toBeGreaterThan(Date.now() + 10_000);
    expect(await holdBatch(tenantId, jobId, 0, 'second', 20_000)).toEqual({ busyUntil: Date.parse(renewed.until) });

    const other = await plannedBatch();
    await holdBatch(other.tenantId, other.jobId, 0, 'first', 0);
    // Not renewed in time: the next delivery takes the batch over, and the first run's renewal fails.
    expect(await holdBatch(other.tenantId, other.jobId, 0, 'second', 20_000)).toMatchObject({ held: { hold: { runner: 'second' } } });
    expect(await renewHold(other.tenantId, other.jobId, 0, 'first', 20_000)).toBe(false);
    // Nor does the first run let go of what is no longer its own.
    await releaseBatch(other.tenantId, other.jobId, 0, 'first');
    expect((await stored(other.tenantId, other.id))!.hold).toMatchObject({ runner: 'second' });
    await releaseBatch(other.tenantId, other.jobId, 0, 'second');
    expect((await stored(other.tenantId, other.id))!.hold).toBeNull();
    expect(await renewHold(other.tenantId, other.jobId, 0, 'second', 20_000)).toBe(false);
    expect((await stored(other.tenantId, other.id))!.hold).toBeNull();
  });

  it('of a batch that does not exist is neither taken nor renewed', async () => {
    const { holdBatch, renewHold } = await batches();
    const tenantId = randomUUID();
    expect(await holdBatch(tenantId, randomUUID(), 0, 'first', 20_000)).toEqual({ missing: true });
    expect(await renewHold(tenantId, randomUUID(), 0, 'first', 20_000)).toBe(false);
  });

  it('goes to one of two runs that both found the batch free, and the other is told until when', async () => {
    const { holdBatch } = await batches();
    const { tenantId, jobId, id } = await plannedBatch();
    // Each run's write waits until both runs have read the batch free and sent theirs.
    const writes: (() => void)[] = [];
    embedded.store.intercept = (record) => {
      if (!isWriteOf(id, 'PUT')(record)) return undefined;
      return new Promise((resolve) => {
        writes.push(() => resolve(undefined));
        if (writes.length === 2) for (const write of writes) write();
      });
    };
    const claims = await Promise.all([holdBatch(tenantId, jobId, 0, 'first', 20_000), holdBatch(tenantId, jobId, 0, 'second', 20_000)]);
    expect(writes).toHaveLength(2);
    const held = claims.filter((claim) => 'held' in claim);
    expect(held).toHaveLength(1);
    const holder = (held[0] as { held: { hold: { runner: string; until: string } } }).held.hold;
    expect(claims.find((claim) => !('held' in claim))).toEqual({ busyUntil: Date.parse(holder.until) });
    expect((await stored(tenantId, id))!.hold).toEqual(holder);
  });

  it('is kept when the store fails to write: the failure is passed on', async () => {
    const { holdBatch, completeBatch } = await batches();
    const { tenantId, jobId, id } = await plannedBatch();
    await holdBatch(tenantId, jobId, 0, 'first', 20_000);
    embedded.store.intercept = (record) => (isWriteOf(id, 'PUT')(record) ? STORE_FAILURE : undefined);
    await expect(completeBatch(tenantId, jobId, 0, COUNTS)).rejects.toMatchObject({ code: 500 });
    expect(await stored(tenantId, id)).toMatchObject({ status: 'Planned', counts: null, hold: { runner: 'first' } });
  });
});

describe('a batch', () => {
  it('planned twice is made once: the second planning keeps the first one as it is', async () => {
    const { planBatch } = await batches();
    const { tenantId, jobId, id } = await plannedBatch();
    const again = await planBatch(tenantId, jobId, 0, { kind: 'task', sourceIds: ['TSK-9'], next: null });
    const first = { kind: 'project', sourceIds: ['PRJ-1', 'PRJ-2'], next: { kind: 'task' } };
    expect(again).toMatchObject({ id, ...first, status: 'Planned' });
    expect(await stored(tenantId, id)).toMatchObject(first);
  });

  it('is not planned when the store fails: the failure is passed on', async () => {
    const { planBatch } = await batches();
    const tenantId = randomUUID();
    const jobId = randomUUID();
    embedded.store.intercept = (record) => (record.method === 'POST' && record.body.includes(`"${jobId}-b0"`) ? STORE_FAILURE : undefined);
    await expect(planBatch(tenantId, jobId, 0, { kind: 'project', sourceIds: ['PRJ-1'], next: null })).rejects.toMatchObject({ code: 500 });
    expect(await stored(tenantId, `${jobId}-b0`)).toBeUndefined();
  });

  it('records its counts once: a second run that ends finds it recorded and changes nothing', async () => {
    const { holdBatch, completeBatch } = await batches();
    const { tenantId, jobId, id } = await plannedBatch();
    await holdBatch(tenantId, jobId, 0, 'first', 20_000);
    expect(await completeBatch(tenantId, jobId, 0, COUNTS)).toBe(true);
    const recorded = await stored(tenantId, id);
    expect(recorded).toMatchObject({ status: 'Done', counts: COUNTS, hold: null });
    expect(await completeBatch(tenantId, jobId, 0, { ...COUNTS, written: 0, unchanged: 5 })).toBe(false);
    expect(await stored(tenantId, id)).toEqual(recorded);
  });

  it('keeps the last error of its runs, cut at 1,000 characters; an error of a batch that is gone records nothing', async () => {
    const { recordBatchError } = await batches();
    const { tenantId, jobId, id } = await plannedBatch();
    await recordBatchError(tenantId, jobId, 0, 'Error: the first');
    expect(await stored(tenantId, id)).toMatchObject({ lastError: 'Error: the first', status: 'Planned' });
    const long = `Error: ${'x'.repeat(2_000)}`;
    await recordBatchError(tenantId, jobId, 0, long);
    expect((await stored(tenantId, id))!.lastError).toBe(long.slice(0, 1_000));

    await recordBatchError(tenantId, randomUUID(), 0, 'Error: of a job that is gone');
    embedded.store.intercept = (record) => (isWriteOf(id, 'PATCH')(record) ? STORE_FAILURE : undefined);
    await expect(recordBatchError(tenantId, jobId, 0, 'Error: not kept')).rejects.toMatchObject({ code: 500 });
  });
});
