/**
 * Transactional batches (shared/data/batches.ts), in process, against the embedded Cosmos store of the
 * local stack started by this file: many writes to one partition cut into batches within Cosmos's
 * limits and sent in order, a delete that finds nothing counted as done (and the rest of its batch,
 * which Cosmos answers 424, sent again), any other failed operation failing the call, a tally sent with
 * each batch and made again from what it sends again, and a batch that cannot be sent reported as the
 * database being unavailable. The app reaches the store through a proxy
 * (test/support/cosmos-proxy.ts) that counts the batches and can answer one itself.
 */
import { randomUUID } from 'node:crypto';
import type { CreateOperationInput, OperationInput } from '@azure/cosmos';
import { describe, expect, it } from 'vitest';
import { MAX_OPERATIONS, sendBatch, writeInBatches, type Tally } from '../../../shared/data/batches.js';
import { tenantData } from '../../../shared/data/tenant-data.js';
import { DependencyUnavailableError } from '../../../shared/errors.js';
import { type CosmosRequestRecord, isBatch, STORE_FAILURE } from '../../support/cosmos-proxy.js';
import { documentsOf, embeddedStoreForTests } from '../../support/embedded-store.js';

const embedded = embeddedStoreForTests();

const partition = () => `batches-${randomUUID()}`;
const body = (tenantId: string, id: string, more: Record<string, unknown> = {}) => ({ id, tenantId, type: 'batch-test', ...more });
const create = (tenantId: string, id: string, more: Record<string, unknown> = {}): CreateOperationInput => ({
  operationType: 'Create',
  partitionKey: tenantId,
  resourceBody: body(tenantId, id, more),
});
const remove = (tenantId: string, id: string): OperationInput => ({ operationType: 'Delete', partitionKey: tenantId, id });
const ids = (count: number, prefix = 'doc') => Array.from({ length: count }, (_, index) => `${prefix}-${String(index).padStart(4, '0')}`);

async function stored(tenantId: string): Promise<Record<string, unknown>[]> {
  const documents = await documentsOf<Record<string, unknown>>(embedded.direct(), tenantId, 'batch-test');
  return documents.sort((a, b) => String(a.id).localeCompare(String(b.id)));
}
const storedIds = async (tenantId: string) => (await stored(tenantId)).map((document) => document.id);

/** The batches `work` sent through the proxy. */
async function batchesOf(work: () => Promise<unknown>): Promise<CosmosRequestRecord[]> {
  const before = embedded.store.requests.length;
  await work();
  return embedded.store.requests.slice(before).filter(isBatch);
}

/** Deletes 150 documents in batches, three of them gone before the batches run: answers the batches sent. */
async function deleteWithThreeGone(tenantId: string, options: { tally?: Tally } = {}): Promise<CosmosRequestRecord[]> {
  const names = ids(150);
  await writeInBatches(
    await tenantData(),
    tenantId,
    names.map((id) => create(tenantId, id)),
  );
  // Each makes Cosmos answer 404 for it and 424 for the rest of its batch.
  for (const id of [names[0]!, names[57]!, names[120]!]) await embedded.direct().item(id, tenantId).delete();
  return batchesOf(async () =>
    writeInBatches(
      await tenantData(),
      tenantId,
      names.map((id) => remove(tenantId, id)),
      options,
    ),
  );
}

/** Answers the next batch with these per-operation statuses, as Cosmos shapes a batch's answer. */
function answerNextBatch(statuses: number[]): void {
  embedded.store.intercept = (record) => {
    if (!isBatch(record)) return undefined;
    embedded.store.intercept = undefined;
    return { status: 200, body: statuses.map((statusCode) => ({ statusCode, requestCharge: 1 })) };
  };
}

describe('writing in batches', () => {
  // 100 and 101: either side of the limit.
  it.each([
    { count: 250, batches: 3 },
    { count: 100, batches: 1 },
    { count: 101, batches: 2 },
  ])('sends $count operations in order, in as few batches of at most 100 as they fit: $batches', async ({ count, batches }) => {
    expect(MAX_OPERATIONS).toBe(100);
    const tenantId = partition();
    const names = ids(count);
    const sent = await batchesOf(async () =>
      writeInBatches(
        await tenantData(),
        tenantId,
        names.map((id) => create(tenantId, id)),
      ),
    );
    expect(sent).toHaveLength(batches);
    expect(await storedIds(tenantId)).toEqual(names);
  });

  it('runs the batches one after the other: a later operation sees what an earlier batch wrote', async () => {
    const tenantId = partition();
    const operations: OperationInput[] = [
      create(tenantId, 'first', { version: 1 }),
      ...ids(99, 'filler').map((id) => create(tenantId, id)),
      { operationType: 'Replace', id: 'first', partitionKey: tenantId, resourceBody: body(tenantId, 'first', { version: 2 }) },
      remove(tenantId, 'filler-0000'),
    ];
    await writeInBatches(await tenantData(), tenantId, operations);
    const documents = await stored(tenantId);
    expect(documents.find((document) => document.id === 'first')).toMatchObject({ version: 2 });
    expect(documents).toHaveLength(99);
  });

  it('keeps a batch within 1.5 MB of bodies: what would pass it starts the next one', async () => {
    const tenantId = partition();
    // Bodies whose JSON is exactly half the cap: two fill a batch, a third starts another.
    const half = (id: string) => {
      const base = Buffer.byteLength(JSON.stringify(body(tenantId, id, { pad: '' })));
      return create(tenantId, id, { pad: 'x'.repeat(750_000 - base) });
    };
    expect(Buffer.byteLength(JSON.stringify(half('a').resourceBody))).toBe(750_000);
    const full = await batchesOf(async () => writeInBatches(await tenantData(), tenantId, [half('a'), half('b')]));
    expect(full).toHaveLength(1);
    const over = await batchesOf(async () => writeInBatches(await tenantData(), tenantId, [half('c'), half('d'), create(tenantId, 'e')]));
    expect(over).toHaveLength(2);
    expect(await storedIds(tenantId)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('counts a delete without a body as small: a hundred of them go in one batch after a large body', async () => {
    const tenantId = partition();
    await writeInBatches(
      await tenantData(),
      tenantId,
      ids(99).map((id) => create(tenantId, id)),
    );
    const large = create(tenantId, 'large', { pad: 'x'.repeat(1_400_000) });
    const batches = await batchesOf(async () => writeInBatches(await tenantData(), tenantId, [large, ...ids(99).map((id) => remove(tenantId, id))]));
    expect(batches).toHaveLength(1);
    expect(await storedIds(tenantId)).toEqual(['large']);
  });

  it('sends nothing for no operations', async () => {
    expect(await batchesOf(async () => writeInBatches(await tenantData(), partition(), []))).toEqual([]);
  });

  it('counts a delete that finds nothing as done, and sends the rest of its batch again', async () => {
    const tenantId = partition();
    const batches = await deleteWithThreeGone(tenantId);
    expect(await storedIds(tenantId)).toEqual([]);
    // Cosmos stops a batch at its first failure: the first batch goes out three times (404 at doc-0000,
    // then at doc-0057, then it runs), the second twice.
    expect(batches).toHaveLength(5);
  });

  it('fails on any other failed operation, naming it, and writes nothing of its batch', async () => {
    const tenantId = partition();
    await writeInBatches(await tenantData(), tenantId, [create(tenantId, 'existing')]);
    await expect(writeInBatches(await tenantData(), tenantId, [create(tenantId, 'fresh'), create(tenantId, 'existing')])).rejects.toThrow(
      'A batch write failed: Create answered 409',
    );
    // A missing document is done only for a delete.
    const replaceMissing: OperationInput = { operationType: 'Replace', id: 'missing', partitionKey: tenantId, resourceBody: body(tenantId, 'missing') };
    await expect(writeInBatches(await tenantData(), tenantId, [create(tenantId, 'other'), replaceMissing])).rejects.toThrow(
      'A batch write failed: Replace answered 404',
    );
    expect(await storedIds(tenantId)).toEqual(['existing']);
  });

  it('fails on a delete that fails otherwise than by finding nothing', async () => {
    const tenantId = partition();
    await writeInBatches(await tenantData(), tenantId, [create(tenantId, 'kept')]);
    answerNextBatch([412]);
    await expect(writeInBatches(await tenantData(), tenantId, [remove(tenantId, 'kept')])).rejects.toThrow('A batch write failed: Delete answered 412');
    answerNextBatch([400]);
    await expect(writeInBatches(await tenantData(), tenantId, [remove(tenantId, 'kept')])).rejects.toThrow('A batch write failed: Delete answered 400');
    expect(await storedIds(tenantId)).toEqual(['kept']);
  });

  it('fails, rather than sending the same batch forever, when every operation answers 424', async () => {
    const tenantId = partition();
    answerNextBatch([424, 424]);
    await expect(writeInBatches(await tenantData(), tenantId, [create(tenantId, 'a'), create(tenantId, 'b')])).rejects.toThrow(
      'A batch write failed: every operation answered 424',
    );
    expect(await storedIds(tenantId)).toEqual([]);
  });

  it('fails when the answer leaves an operation out', async () => {
    const tenantId = partition();
    answerNextBatch([201]);
    await expect(writeInBatches(await tenantData(), tenantId, [create(tenantId, 'a'), remove(tenantId, 'b')])).rejects.toThrow(
      'A batch write got no answer for its Delete operation',
    );
  });

  it('passes statuses under 400 as done', async () => {
    const tenantId = partition();
    answerNextBatch([201, 204, 399]);
    const operations = [create(tenantId, 'a'), remove(tenantId, 'b'), create(tenantId, 'c')];
    expect(await batchesOf(async () => writeInBatches(await tenantData(), tenantId, operations))).toHaveLength(1);
  });
});

describe('writing in batches with a tally', () => {
  /** A tally that adds the number of operations it is sent with to the `removed` of the document `tally`. */
  const countOn =
    (tenantId: string) =>
    (operations: readonly OperationInput[]): OperationInput => ({
      operationType: 'Patch',
      id: 'tally',
      partitionKey: tenantId,
      resourceBody: { operations: [{ op: 'incr', path: '/removed', value: operations.length }] },
    });

  it('sends each batch with its tally first, 100 operations in all, made again from what a batch sends again: it counts what committed', async () => {
    const tenantId = partition();
    await writeInBatches(await tenantData(), tenantId, [create(tenantId, 'tally', { removed: 0 })]);
    // Each gone document makes Cosmos answer 424 for the tally too.
    const batches = await deleteWithThreeGone(tenantId, { tally: countOn(tenantId) });
    expect(await stored(tenantId)).toEqual([expect.objectContaining({ id: 'tally', removed: 147 })]);
    // 99 deletes and the tally a batch: the first (doc-0000 to doc-0098) goes out three times, the second twice.
    expect(batches).toHaveLength(5);
    for (const batch of batches) expect(batch.body).toMatch(/^\[\{"operationType":"Patch","id":"tally"/);
  });

  it('fails when the tally fails, its status as the error’s code, and writes nothing of its batch', async () => {
    const tenantId = partition();
    await writeInBatches(await tenantData(), tenantId, [create(tenantId, 'kept')]);
    const failure = writeInBatches(await tenantData(), tenantId, [remove(tenantId, 'kept')], { tally: countOn(tenantId) });
    await expect(failure).rejects.toThrow('A batch write failed: Patch answered 404');
    await expect(failure).rejects.toMatchObject({ code: 404 });
    expect(await storedIds(tenantId)).toEqual(['kept']);
  });
});

describe('sending one batch', () => {
  it("answers each operation's outcome, in order, and leaves the operations given as they were: they can be sent again", async () => {
    const tenantId = partition();
    const operations: OperationInput[] = [
      { operationType: 'Upsert', partitionKey: tenantId, resourceBody: body(tenantId, 'a') },
      { operationType: 'Upsert', partitionKey: tenantId, resourceBody: body(tenantId, 'b') },
    ];
    const copy = structuredClone(operations);
    const first = await sendBatch(await tenantData(), operations, tenantId);
    expect(first.map((result) => result.statusCode)).toEqual([201, 201]);
    expect(operations).toEqual(copy);
    const again = await sendBatch(await tenantData(), operations, tenantId);
    expect(again.map((result) => result.statusCode)).toEqual([200, 200]);
    const failed = await sendBatch(await tenantData(), [create(tenantId, 'c'), create(tenantId, 'a')], tenantId);
    expect(failed.map((result) => result.statusCode)).toEqual([424, 409]);
  });

  it('answers no outcomes when the store answers none', async () => {
    embedded.store.intercept = (record) => (isBatch(record) ? { status: 200, body: [] } : undefined);
    expect(await sendBatch(await tenantData(), [create(partition(), 'a')], 'x')).toEqual([]);
  });

  it('reports a batch that cannot be sent as the database being unavailable', async () => {
    embedded.store.intercept = (record) => (isBatch(record) ? STORE_FAILURE : undefined);
    const tenantId = partition();
    const failure = await sendBatch(await tenantData(), [create(tenantId, 'a')], tenantId).then(
      () => expect.unreachable('the batch was sent'),
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(DependencyUnavailableError);
    expect(failure).toMatchObject({ dependency: 'database', cause: expect.any(Error) });
    await expect(writeInBatches(await tenantData(), tenantId, [create(tenantId, 'a')])).rejects.toBeInstanceOf(DependencyUnavailableError);
  });
});
