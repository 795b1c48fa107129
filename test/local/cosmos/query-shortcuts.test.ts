import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { installQueryShortcuts } from '../../../local/cosmos/query-shortcuts.js';

/**
 * The embedded Cosmos DB's query shortcuts against the server's own full run, on the server's own
 * document collection: every page of every query, with writes between the pages, must be the same
 * rows and the same continuation.
 */
const require = createRequire(import.meta.url);
const Account = (require('@vercel/cosmosdb-server/lib/account/index.js') as { default: new (host: string, port: number) => ServerAccount }).default;
const Items = (require('@vercel/cosmosdb-server/lib/account/items.js') as { default: { prototype: { query: QueryMethod } } }).default;

type Page = { result: unknown[]; continuation: { token: string } | null } | null;
type QueryMethod = (
  params: { query: string; parameters: { name: string; value: unknown }[] },
  scope: { maxItemCount: number; continuation: unknown; partitionKey?: readonly unknown[] },
) => Page;
interface ServerDocuments {
  query: QueryMethod;
  create(document: object): void;
  upsert(document: object): { _ts: number };
  _set(document: object): void;
  delete(id: string, partition: string): void;
  /** The patch's: removes the documents past their time to live, and answers those whose id no live document took again. */
  _purge(): { id: string }[];
  _data: Map<string, unknown>;
}
interface ServerAccount {
  databases: { create(definition: object): void };
  database(id: string): { collections: { create(definition: object): void }; collection(id: string): { documents: ServerDocuments } };
}

installQueryShortcuts();

const TENANTS = ['t1', 't2'];
const TYPES = ['task', 'project', 'ragBatch'];
const IDS = Array.from({ length: 16 }, (_, index) => `D-${index}`);

const fieldValue = fc.oneof(fc.constantFrom(0, 1, 2, '1', 'x', true, false, null), fc.constant(undefined), fc.constant({ nested: 1 }));
const document = fc.record({
  id: fc.constantFrom(...IDS),
  tenantId: fc.constantFrom(...TENANTS),
  type: fc.constantFrom(...TYPES),
  n: fieldValue,
  jobId: fc.option(fc.constantFrom('j1', 'j2'), { nil: undefined }),
  tags: fc.option(fc.subarray(['a', 'b', 'c']), { nil: undefined }),
  // The container has `defaultTtl: -1`: only a document's own `ttl` expires it.
  ttl: fc.option(fc.constantFrom(-1, 5, 3600), { nil: undefined }),
});
const write = fc.oneof(
  // `aged`: written ten seconds ago, so that a `ttl` of 5 has run out.
  fc.record({ upsert: document, aged: fc.boolean() }),
  fc.record({ delete: fc.constantFrom(...IDS), tenantId: fc.constantFrom(...TENANTS) }),
  // What the embedded Cosmos DB runs every minute.
  fc.constant({ purge: true as const }),
);

/** Queries of the shapes the app sends, and of shapes the shortcuts must leave alone. */
const query = fc.oneof(
  fc.record({
    text: fc.constant('SELECT * FROM c WHERE c.tenantId = @tenantId AND c.type = @type'),
    tenantId: fc.constantFrom(...TENANTS),
    type: fc.constantFrom(...TYPES),
  }),
  fc.record({
    text: fc.constant('SELECT VALUE c.id FROM c WHERE c.tenantId = @tenantId AND ARRAY_CONTAINS(@ids, c.id)'),
    tenantId: fc.constantFrom(...TENANTS),
    ids: fc.oneof(fc.subarray(IDS), fc.constant([1, '1', null, { id: 'D-1' }])),
  }),
  fc.record({ text: fc.constant('SELECT c.id, c.n FROM c WHERE c.n = @n AND c.type != "ragBatch"'), n: fieldValue.filter((value) => value !== undefined) }),
  fc.record({ text: fc.constantFrom('SELECT * FROM c WHERE c.n = 1', 'SELECT * FROM c WHERE 1 = c.n AND c.jobId = "j1"', 'SELECT * FROM c WHERE c.n = null') }),
  fc.record({
    text: fc.constant('SELECT r.id FROM root r WHERE array_contains(@ns, r.n, false) AND r.tenantId = "t1"'),
    ns: fc.subarray([0, 1, 2, 'x', null, true]),
  }),
  fc.record({ text: fc.constant('SELECT * FROM c WHERE c.type = @type OR c.n = 1'), type: fc.constantFrom(...TYPES) }),
  fc.record({ text: fc.constant('SELECT * FROM c WHERE c.tenantId = @tenantId ORDER BY c.id DESC'), tenantId: fc.constantFrom(...TENANTS) }),
  fc.record({
    text: fc.constantFrom(
      'SELECT VALUE COUNT(1) FROM c WHERE c.type = "task"',
      'SELECT TOP 3 * FROM c WHERE c.tenantId = "t1"',
      'SELECT * FROM c',
      'SELECT VALUE c.id FROM c',
    ),
  }),
  fc.record({ text: fc.constant('SELECT c.id, t FROM c JOIN t IN c.tags WHERE c.type = "task"') }),
  fc.record({ text: fc.constant('SELECT * FROM c WHERE c.type = @type'), type: fc.constantFrom({ nested: 1 }, [1]) }),
);

function freshCollection(): ServerDocuments {
  const account = new Account('localhost', 8081);
  account.databases.create({ id: 'db' });
  account.database('db').collections.create({ id: 'items', partitionKey: { paths: ['/tenantId'] }, defaultTtl: -1 });
  return account.database('db').collection('items').documents;
}

type Change = { upsert: object; aged: boolean } | { delete: string; tenantId: string } | { purge: true };

/** The `_rid`s that the shortcuts' index files under some field's value but the server no longer holds. */
function filedButGone(documents: ServerDocuments): string[] {
  const { shortcutIndex } = documents as unknown as { shortcutIndex?: { byField: Map<string, Map<unknown, Set<string>>> } };
  const filed = [...(shortcutIndex?.byField.values() ?? [])].flatMap((values) => [...values.values()].flatMap((rids) => [...rids]));
  return filed.filter((rid) => !documents._data.has(rid));
}

function apply(documents: ServerDocuments, change: Change): void {
  try {
    if ('purge' in change) documents._purge();
    else if ('upsert' in change) {
      const written = documents.upsert(change.upsert);
      if (change.aged) documents._set({ ...written, _ts: written._ts - 10 });
    } else documents.delete(change.delete, change.tenantId);
  } catch {
    // A delete of what is not there fails in both runs alike.
  }
}

describe('the embedded Cosmos DB query shortcuts', () => {
  it('give every page the rows and continuation of the full run, with writes between pages, in a partition or across them', () => {
    fc.assert(
      fc.property(
        fc.array(write, { maxLength: 40 }),
        query,
        fc.constantFrom(-1, 1, 2, 3, 7),
        fc.array(fc.array(write, { maxLength: 8 }), { maxLength: 12 }),
        fc.option(fc.constantFrom(['t1'], ['t2'], ['t3']), { nil: undefined }),
        fc.boolean(),
        (seed, { text, ...values }, maxItemCount, between, partitionKey, indexedFirst) => {
          const documents = freshCollection();
          const params = { query: text, parameters: Object.entries(values).map(([name, value]) => ({ name: `@${name}`, value })) };
          // The index made before the seed's writes, so that they (their deletes and purges too) keep it, or made from them.
          if (indexedFirst) documents.query(params, { maxItemCount, continuation: null, partitionKey });
          for (const change of seed) apply(documents, change);
          expect(filedButGone(documents)).toEqual([]);
          let continuation: unknown = null;
          for (let page = 0; page <= between.length; page++) {
            const expected = Items.prototype.query.call(documents, params, { maxItemCount, continuation, partitionKey });
            const actual = documents.query(params, { maxItemCount, continuation, partitionKey });
            expect(actual).toEqual(expected);
            expect(actual?.result.length).toBeLessThanOrEqual(maxItemCount > 0 ? maxItemCount : Infinity);
            continuation = actual?.continuation;
            if (!continuation) return;
            for (const change of between[page] ?? []) apply(documents, change);
            // The index files no document that a delete or a purge removed.
            expect(filedButGone(documents)).toEqual([]);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('finds what was written after the index of a field was made', () => {
    const documents = freshCollection();
    for (let index = 0; index < 10; index++) documents.create({ id: `A-${index}`, tenantId: 't1', type: index < 3 ? 'task' : 'project' });
    const tasks = { query: 'SELECT VALUE c.id FROM c WHERE c.type = @type', parameters: [{ name: '@type', value: 'task' }] };
    expect(documents.query(tasks, { maxItemCount: -1, continuation: null })?.result).toHaveLength(3);
    documents.create({ id: 'B-1', tenantId: 't1', type: 'task' });
    documents.upsert({ id: 'A-9', tenantId: 't1', type: 'task' });
    documents.upsert({ id: 'A-0', tenantId: 't1', type: 'project' });
    expect(new Set(documents.query(tasks, { maxItemCount: -1, continuation: null })?.result)).toEqual(new Set(['A-1', 'A-2', 'A-9', 'B-1']));
  });

  it('purges what is past its time to live by its _rid, not the live document that took its id again, and its index with it', () => {
    const documents = freshCollection();
    const aged = (document: object) => {
      const written = documents.upsert(document);
      documents._set({ ...written, _ts: written._ts - 10 });
    };
    aged({ id: 'A', tenantId: 't1', type: 'task', ttl: 5 });
    aged({ id: 'B', tenantId: 't1', type: 'task', ttl: 5 });
    documents.create({ id: 'C', tenantId: 't1', type: 'task', ttl: -1 });
    const tasks = { query: 'SELECT VALUE c.id FROM c WHERE c.type = @type', parameters: [{ name: '@type', value: 'task' }] };
    expect(documents.query(tasks, { maxItemCount: -1, continuation: null })?.result).toEqual(['C']);
    // A's id, free since it expired, taken again: another document, under a `_rid` of its own.
    documents.create({ id: 'A', tenantId: 't1', type: 'task' });
    expect(documents._data.size).toBe(4);
    expect(documents._purge().map(({ id }) => id)).toEqual(['B']);
    expect(documents._data.size).toBe(2);
    expect(filedButGone(documents)).toEqual([]);
    expect(new Set(documents.query(tasks, { maxItemCount: -1, continuation: null })?.result)).toEqual(new Set(['A', 'C']));
    documents.delete('A', 't1');
    expect(documents.query(tasks, { maxItemCount: -1, continuation: null })?.result).toEqual(['C']);
  });

  it('makes an error of the query the client’s, as the full run does', () => {
    const documents = freshCollection();
    documents.create({ id: 'D-1', tenantId: 't1' });
    // Two sort keys need a composite index, which this container has not.
    const params = { query: 'SELECT * FROM c WHERE c.tenantId = @tenantId ORDER BY c.a, c.b', parameters: [{ name: '@tenantId', value: 't1' }] };
    const paging = { maxItemCount: 1, continuation: null };
    const badRequest = expect.objectContaining({ badRequest: true }) as Error;
    expect(() => Items.prototype.query.call(documents, params, paging)).toThrow(badRequest);
    expect(() => documents.query(params, paging)).toThrow(badRequest);
  });
});

describe('the query engine as patched at install (patches/@zeit+cosmosdb-query+*.patch)', () => {
  const { default: query } = require('@zeit/cosmosdb-query') as { default: (sql: string) => { code: string } };
  const { stripUndefined } = require('@zeit/cosmosdb-query/lib/helpers.js') as { stripUndefined: (value: unknown) => unknown };

  it('pushes each row onto one array instead of copying the array per row', () => {
    for (const sql of ['SELECT * FROM c', 'SELECT c.id, t FROM c JOIN t IN c.tags', 'SELECT VALUE c.id FROM c.items c']) {
      const { code } = query(sql);
      expect(code, sql).toContain('$.push(');
      expect(code, sql).not.toContain('[...$');
    }
  });

  it('still leaves undefined out of arrays and objects, as JSON does', () => {
    expect(stripUndefined([1, undefined, { a: undefined, b: [undefined, 2] }])).toEqual([1, { b: [2] }]);
  });
});
