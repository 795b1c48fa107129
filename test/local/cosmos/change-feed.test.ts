/**
 * The embedded Cosmos DB's change feed and transactional batches, through the real @azure/cosmos
 * client, against what Cosmos DB does: the feed in latest-version mode (each change once, in write
 * order, as the document now is; a continuation that resumes after the last change read; 304 when
 * nothing is new; scoped by partition key; from the beginning, from now or from a continuation;
 * deletes absent), and batches that apply all of their operations or none.
 */
import { join } from 'node:path';
import { ChangeFeedStartFrom, StatusCodes, type ChangeFeedPullModelIterator, type Container } from '@azure/cosmos';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CosmosEmulator } from '../../../local/cosmos/emulator.js';
import { temporaryEmulators } from '../../support/temporary-emulators.js';

interface Item {
  id: string;
  tenantId: string;
  value?: number;
  _lsn?: number;
}

const emulators = temporaryEmulators('cosmos-change-feed-test');

async function start(dataDir?: string): Promise<{ emulator: CosmosEmulator; container: Container }> {
  const emulator = await emulators.start(dataDir);
  return { emulator, container: emulator.client.database('lms').container('tenant-data') };
}

/** Every page the iterator has now, until it answers 304; the ids of each page, and the continuation after the last. */
async function drain(iterator: ChangeFeedPullModelIterator<Item>): Promise<{ pages: Item[][]; continuation: string }> {
  const pages: Item[][] = [];
  for (;;) {
    const page = await iterator.readNext();
    if (page.statusCode === StatusCodes.NotModified) return { pages, continuation: page.continuationToken };
    expect(page.statusCode).toBe(StatusCodes.Ok);
    pages.push(page.result);
  }
}
const ids = (pages: Item[][]) => pages.flat().map((item) => `${item.tenantId}/${item.id}`);

describe('the change feed of the embedded Cosmos DB', () => {
  let container: Container;
  beforeAll(async () => {
    ({ container } = await start());
  });

  it('gives each change once, in write order, as the document now is, and leaves deletes out', async () => {
    const from = container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    expect((await from.readNext()).statusCode).toBe(StatusCodes.NotModified);
    await container.items.create({ id: 'a', tenantId: 'order', value: 1 });
    await container.items.create({ id: 'b', tenantId: 'order', value: 1 });
    await container.items.create({ id: 'c', tenantId: 'order', value: 1 });
    await container.item('a', 'order').replace({ id: 'a', tenantId: 'order', value: 2 });
    await container.item('b', 'order').delete();
    await container.item('c', 'order').patch([{ op: 'set', path: '/value', value: 3 }]);
    const { pages } = await drain(from);
    expect(ids(pages)).toEqual(['order/a', 'order/c']);
    expect(pages.flat().map((item) => item.value)).toEqual([2, 3]);
    // Each change carries its logical sequence number, increasing in write order.
    const [a, c] = pages.flat();
    expect(a!._lsn).toBeLessThan(c!._lsn!);
  });

  it('resumes after the last change read from a continuation, in another iterator, and pages by maxItemCount', async () => {
    const first = container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Now(), maxItemCount: 2 });
    const { continuation: start } = await drain(first);
    for (let index = 0; index < 5; index++) await container.items.create({ id: `p${index}`, tenantId: 'paging' });
    const reader = container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(start), maxItemCount: 2 });
    const firstPage = await reader.readNext();
    expect(ids([firstPage.result])).toEqual(['paging/p0', 'paging/p1']);
    // A new iterator from the first page's continuation goes on after it, whatever was read in between.
    const resumed = container.items.getChangeFeedIterator<Item>({
      changeFeedStartFrom: ChangeFeedStartFrom.Continuation(firstPage.continuationToken),
      maxItemCount: 2,
    });
    const { pages, continuation } = await drain(resumed);
    expect(pages.map((page) => page.length)).toEqual([2, 1]);
    expect(ids(pages)).toEqual(['paging/p2', 'paging/p3', 'paging/p4']);
    // From the end, nothing new: 304, and the same continuation.
    const atEnd = await container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(continuation) }).readNext();
    expect(atEnd.statusCode).toBe(StatusCodes.NotModified);
  });

  it('reads one partition key alone, and a document changed again moves to its new place', async () => {
    const scoped = container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning('mine') });
    await container.items.create({ id: 'x', tenantId: 'mine' });
    await container.items.create({ id: 'x', tenantId: 'theirs' });
    await container.items.create({ id: 'y', tenantId: 'mine' });
    await container.item('x', 'mine').replace({ id: 'x', tenantId: 'mine', value: 9 });
    const { pages } = await drain(scoped);
    expect(ids(pages)).toEqual(['mine/y', 'mine/x']);
  });

  it('reads every change from the beginning', async () => {
    const { container: fresh } = await start();
    await fresh.items.create({ id: 'first', tenantId: 't' });
    await fresh.items.create({ id: 'second', tenantId: 'u' });
    const { pages } = await drain(fresh.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
    expect(ids(pages)).toEqual(['t/first', 'u/second']);
  });

  it('keeps its order and continuations across a restart', async () => {
    const dataDir = join(emulators.folder, 'restart');
    const before = await start(dataDir);
    // A deleted document leaves a gap in the LSNs: numbering the kept documents anew would move the continuation.
    await before.container.items.create({ id: 'gone', tenantId: 'kept' });
    await before.container.item('gone', 'kept').delete();
    await before.container.items.create({ id: 'one', tenantId: 'kept' });
    const { continuation } = await drain(before.container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
    await before.container.items.create({ id: 'two', tenantId: 'kept' });
    await before.container.items.create({ id: 'three', tenantId: 'kept' });
    await before.container.item('two', 'kept').replace({ id: 'two', tenantId: 'kept', value: 2 });
    await emulators.close(before.emulator);
    const after = await start(dataDir);
    const { pages } = await drain(after.container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(continuation) }));
    expect(ids(pages)).toEqual(['kept/three', 'kept/two']);
    // New writes come after the kept ones.
    await after.container.items.create({ id: 'four', tenantId: 'kept' });
    const all = await drain(after.container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning('kept') }));
    expect(ids(all.pages)).toEqual(['kept/one', 'kept/three', 'kept/two', 'kept/four']);
  });

  it('shows the writes after a restart to a continuation read past deletes that were the last writes before it', async () => {
    const dataDir = join(emulators.folder, 'restart-after-deletes');
    const before = await start(dataDir);
    await before.container.items.create({ id: 'one', tenantId: 'tail' });
    for (const id of ['x', 'y', 'z']) await before.container.items.create({ id, tenantId: 'tail' });
    for (const id of ['x', 'y', 'z']) await before.container.item(id, 'tail').delete();
    // The relay's lease checkpoints this: past the deletes, which leave no document behind.
    const { continuation } = await drain(before.container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
    await emulators.close(before.emulator);
    const after = await start(dataDir);
    await after.container.items.create({ id: 'two', tenantId: 'tail' });
    const { pages } = await drain(after.container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(continuation) }));
    expect(ids(pages)).toEqual(['tail/two']);
  });
});

describe('transactional batches in the embedded Cosmos DB', () => {
  it('apply every operation or none: a failing one leaves the others undone, answering 424', async () => {
    const { container } = await start();
    await container.items.create({ id: 'kept', tenantId: 't', value: 1 });
    await container.items.create({ id: 'doomed', tenantId: 't', value: 1 });
    const feed = container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    await drain(feed);
    const { result = [] } = await container.items.batch(
      [
        { operationType: 'Create', resourceBody: { id: 'new', tenantId: 't' } },
        { operationType: 'Replace', id: 'kept', resourceBody: { id: 'kept', tenantId: 't', value: 2 } },
        { operationType: 'Delete', id: 'doomed' },
        { operationType: 'Create', resourceBody: { id: 'kept', tenantId: 't' } },
        { operationType: 'Read', id: 'kept' },
      ],
      't',
    );
    expect(result.map((operation) => operation.statusCode)).toEqual([424, 424, 424, 409, 424]);
    expect((await container.item('new', 't').read()).resource).toBeUndefined();
    expect((await container.item('kept', 't').read<Item>()).resource).toMatchObject({ value: 1 });
    expect((await container.item('doomed', 't').read<Item>()).resource).toMatchObject({ value: 1 });
    // Nothing of it reached the change feed either.
    expect((await drain(feed)).pages).toEqual([]);
    // The documents it touched are as they were: they can still be replaced under their old etag.
    const { resource: kept } = await container.item('kept', 't').read<Item & { _etag: string }>();
    await container.item('kept', 't').replace({ id: 'kept', tenantId: 't', value: 3 }, { accessCondition: { type: 'IfMatch', condition: kept!._etag } });
  });

  it('that succeed are one change in the feed, their documents together on one page', async () => {
    const { container } = await start();
    const feed = container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Now(), maxItemCount: 1 });
    await drain(feed);
    const { result = [] } = await container.items.batch(
      [
        { operationType: 'Create', resourceBody: { id: 'one', tenantId: 't' } },
        { operationType: 'Create', resourceBody: { id: 'two', tenantId: 't' } },
      ],
      't',
    );
    expect(result.map((operation) => operation.statusCode)).toEqual([201, 201]);
    const { pages } = await drain(feed);
    expect(pages.map((page) => page.map((item) => item.id))).toEqual([['one', 'two']]);
  });
});

describe('conditional patches in transactional batches of the embedded Cosmos DB', () => {
  it('apply when the document meets the condition as written, and fail the batch with 412 when it does not', async () => {
    const { container } = await start();
    await container.items.create({ id: 'parent', tenantId: 't', status: 'Active' });
    // The same id in another partition, meeting the condition, does not stand in for the one named.
    await container.items.create({ id: 'parent', tenantId: 'u', status: 'Active' });
    const guarded = (status: string, child: string) =>
      container.items.batch(
        [
          {
            operationType: 'Patch',
            id: 'parent',
            resourceBody: { condition: `FROM c WHERE c.status = '${status}'`, operations: [{ op: 'incr', path: '/guarded', value: 1 }] },
          },
          { operationType: 'Create', resourceBody: { id: child, tenantId: 't' } },
        ],
        't',
      );
    expect((await guarded('Active', 'first')).result!.map((operation) => operation.statusCode)).toEqual([200, 201]);
    expect((await container.item('parent', 't').read()).resource).toMatchObject({ status: 'Active', guarded: 1 });

    await container.item('parent', 't').patch([{ op: 'set', path: '/status', value: 'Archived' }]);
    expect((await guarded('Active', 'second')).result!.map((operation) => operation.statusCode)).toEqual([412, 424]);
    expect((await container.item('second', 't').read()).resource).toBeUndefined();
    expect((await container.item('parent', 't').read()).resource).toMatchObject({ guarded: 1 });
    // The literal keeps its case: 'archived' is not 'Archived'.
    expect((await guarded('archived', 'third')).result!.map((operation) => operation.statusCode)).toEqual([412, 424]);
    expect((await guarded('Archived', 'fourth')).result!.map((operation) => operation.statusCode)).toEqual([200, 201]);
  });

  it('answer 404 for a document that is not there', async () => {
    const { container } = await start();
    const { result = [] } = await container.items.batch(
      [
        { operationType: 'Patch', id: 'missing', resourceBody: { condition: 'FROM c WHERE true', operations: [{ op: 'incr', path: '/guarded', value: 1 }] } },
        { operationType: 'Create', resourceBody: { id: 'child', tenantId: 't' } },
      ],
      't',
    );
    expect(result.map((operation) => operation.statusCode)).toEqual([404, 424]);
  });
});

describe('bulk requests to the embedded Cosmos DB', () => {
  it('show each operation that succeeded in the change feed, the failed ones not', async () => {
    const { container } = await start();
    await container.items.create({ id: 'existing', tenantId: 't' });
    const feed = container.items.getChangeFeedIterator<Item>({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    await drain(feed);
    const results = await container.items.executeBulkOperations([
      { operationType: 'Create', partitionKey: 't', resourceBody: { id: 'bulk-1', tenantId: 't' } },
      { operationType: 'Create', partitionKey: 't', resourceBody: { id: 'existing', tenantId: 't' } },
      { operationType: 'Upsert', partitionKey: 't', resourceBody: { id: 'bulk-2', tenantId: 't', value: 2 } },
    ]);
    expect(results.map((result) => result.response?.statusCode ?? result.error?.code)).toEqual([201, 409, 201]);
    const { pages } = await drain(feed);
    expect(ids(pages)).toEqual(['t/bulk-1', 't/bulk-2']);
    expect(pages.flat().map((item) => item.value)).toEqual([undefined, 2]);
  });
});
