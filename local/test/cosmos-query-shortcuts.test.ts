import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { installQueryShortcuts } from '../cosmos-query-shortcuts.js';

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

type Change = { upsert: object; aged: boolean } | { delete: string; tenantId: string };

function apply(documents: ServerDocuments, change: Change): void {
  try {
    if ('upsert' in change) {
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
        (seed, { text, ...values }, maxItemCount, between, partitionKey) => {
          const documents = freshCollection();
          for (const change of seed) apply(documents, change);
          const params = { query: text, parameters: Object.entries(values).map(([name, value]) => ({ name: `@${name}`, value })) };
          let continuation: unknown = null;
          for (let page = 0; page <= between.length; page++) {
            const expected = Items.prototype.query.call(documents, params, { maxItemCount, continuation, partitionKey });
            const actual = documents.query(params, { maxItemCount, continuation, partitionKey });
            expect(actual).toEqual(expected);
            expect(actual?.result.length).toBeLessThanOrEqual(maxItemCount > 0 ? maxItemCount : Infinity);
            continuation = actual?.continuation;
            if (!continuation) return;
            for (const change of between[page] ?? []) apply(documents, change);
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
