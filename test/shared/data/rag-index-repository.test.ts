/**
 * The RAG index (shared/data/rag-index-repository.ts), in process, against the embedded Cosmos store
 * started by this file, reached through a proxy (test/support/cosmos-proxy.ts) that records where each
 * request goes. The embedded store runs a query over every partition whatever partition key it names
 * (docs/local-stack.md): each test stores another tenant's chunks, under the same ids and projects,
 * next to the caller's, so that only the query's own `c.tenantId` condition keeps them apart.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  chunkPages,
  chunksOfSources,
  deleteChunks,
  indexTotals,
  storedEmbeddings,
  writeChunks,
  type ChunkDocument,
  type StoredChunkSummary,
} from '../../../shared/data/rag-index-repository.js';
import { writesIn } from '../../support/cosmos-proxy.js';
import { embeddedStoreForTests } from '../../support/embedded-store.js';

const embedded = embeddedStoreForTests();

/** Chunk `chunkIndex` of a source in a project, written by `jobId`, with a vector when given one. */
function chunk(
  tenantId: string,
  source: { sourceType?: 'project' | 'task'; sourceId: string; projectId: string },
  chunkIndex: number,
  fields: { jobId?: string; embedding?: number[]; contentHash?: string } = {},
): ChunkDocument {
  return {
    id: `${source.sourceId}-c${chunkIndex}`,
    tenantId,
    sourceType: source.sourceType ?? 'task',
    sourceId: source.sourceId,
    projectId: source.projectId,
    title: `Title of ${source.sourceId}`,
    chunkIndex,
    content: `Chunk ${chunkIndex} of ${source.sourceId}`,
    contentHash: fields.contentHash ?? `hash-${source.sourceId}-${chunkIndex}`,
    updatedAt: '2026-11-27T00:00:00.000Z',
    jobId: fields.jobId ?? 'job-1',
    ...(fields.embedding ? { embedding: fields.embedding } : {}),
  };
}

/** What a rebuild reads of a stored chunk. */
function summaryOf(document: ChunkDocument): StoredChunkSummary {
  return {
    id: document.id,
    sourceType: document.sourceType,
    sourceId: document.sourceId,
    projectId: document.projectId,
    contentHash: document.contentHash,
    hasEmbedding: document.embedding !== undefined,
    jobId: document.jobId,
  };
}

const byId = <T extends { id: string }>(items: T[]): T[] => [...items].sort((a, b) => a.id.localeCompare(b.id));

async function stored(tenantId: string, projectId: string, id: string): Promise<ChunkDocument | undefined> {
  const { resource } = await embedded.direct('rag-index').item(id, [tenantId, projectId]).read<ChunkDocument>();
  return resource;
}

/** The requests sent since request number `from`. */
const requestsSince = (from: number) => embedded.store.requests.slice(from);

/**
 * Two tenants indexed alike: the same projects, sources and chunk ids, each with its own hashes, job
 * and vectors. A project's source (PRJ-1) and two tasks of it, a task of another project.
 */
async function twoTenants() {
  const tenantId = randomUUID();
  const otherTenantId = randomUUID();
  const chunksOf = (tenant: string, job: string) => [
    chunk(tenant, { sourceType: 'project', sourceId: 'PRJ-1', projectId: 'PRJ-1' }, 0, { jobId: job, embedding: [0.1, 0.2], contentHash: `${job}-a` }),
    chunk(tenant, { sourceId: 'TSK-1', projectId: 'PRJ-1' }, 0, { jobId: job, contentHash: `${job}-b` }),
    chunk(tenant, { sourceId: 'TSK-1', projectId: 'PRJ-1' }, 1, { jobId: job, embedding: [0.3, 0.4], contentHash: `${job}-c` }),
    chunk(tenant, { sourceId: 'TSK-2', projectId: 'PRJ-2' }, 0, { jobId: job, embedding: [0.5, 0.6], contentHash: `${job}-d` }),
  ];
  const chunks = chunksOf(tenantId, 'job-mine');
  const otherChunks = chunksOf(otherTenantId, 'job-other');
  await writeChunks(tenantId, chunks);
  await writeChunks(otherTenantId, otherChunks);
  return { tenantId, otherTenantId, chunks, otherChunks };
}

describe('writing chunks', () => {
  it("puts each chunk in its tenant's and project's partition, one batch a project, and overwrites a chunk written again", async () => {
    const tenantId = randomUUID();
    const first = chunk(tenantId, { sourceId: 'TSK-1', projectId: 'PRJ-1' }, 0);
    const second = chunk(tenantId, { sourceId: 'TSK-1', projectId: 'PRJ-1' }, 1);
    const third = chunk(tenantId, { sourceId: 'TSK-2', projectId: 'PRJ-2' }, 0, { embedding: [1, 2, 3] });
    const from = embedded.store.requests.length;
    await writeChunks(tenantId, [first, third, second]);
    const writes = writesIn(requestsSince(from));
    expect(writes.map((write) => write.partitionKey).sort()).toEqual([JSON.stringify([tenantId, 'PRJ-1']), JSON.stringify([tenantId, 'PRJ-2'])]);
    for (const written of [first, second, third]) expect(await stored(tenantId, written.projectId, written.id)).toMatchObject(written);
    // Under another tenant there is none of them.
    expect(await stored(randomUUID(), 'PRJ-1', first.id)).toBeUndefined();

    const rewritten = { ...first, contentHash: 'changed', jobId: 'job-2' };
    await writeChunks(tenantId, [rewritten]);
    expect(await stored(tenantId, 'PRJ-1', first.id)).toMatchObject(rewritten);
    expect(byId(await chunksOfSources(tenantId, ['TSK-1']))).toEqual([summaryOf(rewritten), summaryOf(second)]);
  });

  it('writes nothing when given nothing', async () => {
    const from = embedded.store.requests.length;
    await writeChunks(randomUUID(), []);
    expect(writesIn(requestsSince(from))).toEqual([]);
  });
});

describe('the stored chunks of some sources', () => {
  it("are the caller's tenant's chunks of those sources, by id, hash, vector or not, and job", async () => {
    const { tenantId, otherTenantId, chunks, otherChunks } = await twoTenants();
    expect(byId(await chunksOfSources(tenantId, ['TSK-1', 'TSK-2']))).toEqual(chunks.slice(1).map(summaryOf));
    expect(byId(await chunksOfSources(tenantId, ['PRJ-1']))).toEqual([summaryOf(chunks[0]!)]);
    expect(byId(await chunksOfSources(otherTenantId, ['TSK-1']))).toEqual([summaryOf(otherChunks[1]!), summaryOf(otherChunks[2]!)]);
    expect(await chunksOfSources(tenantId, ['TSK-9'])).toEqual([]);
    expect(await chunksOfSources(randomUUID(), ['PRJ-1', 'TSK-1', 'TSK-2'])).toEqual([]);
  });

  it("are asked of the tenant's partitions only", async () => {
    const { tenantId } = await twoTenants();
    const from = embedded.store.requests.length;
    await chunksOfSources(tenantId, ['TSK-1']);
    const queries = requestsSince(from).filter((request) => request.isQuery);
    expect(queries.map((query) => query.partitionKey)).toEqual([JSON.stringify([tenantId])]);
  });
});

describe('the stored vectors of some chunks', () => {
  it("are the caller's tenant's, of the chunks named that have one", async () => {
    const { tenantId, otherTenantId } = await twoTenants();
    const ids = ['PRJ-1-c0', 'TSK-1-c0', 'TSK-1-c1', 'TSK-9-c0'];
    expect(await storedEmbeddings(tenantId, ids)).toEqual(
      new Map([
        ['PRJ-1-c0', [0.1, 0.2]],
        ['TSK-1-c1', [0.3, 0.4]],
      ]),
    );
    const from = embedded.store.requests.length;
    expect(await storedEmbeddings(otherTenantId, ['TSK-2-c0'])).toEqual(new Map([['TSK-2-c0', [0.5, 0.6]]]));
    expect(
      requestsSince(from)
        .filter((request) => request.isQuery)
        .map((query) => query.partitionKey),
    ).toEqual([JSON.stringify([otherTenantId])]);
    expect(await storedEmbeddings(randomUUID(), ids)).toEqual(new Map());
  });

  it('of no chunks are none, without asking the store', async () => {
    const from = embedded.store.requests.length;
    expect(await storedEmbeddings(randomUUID(), [])).toEqual(new Map());
    expect(requestsSince(from)).toEqual([]);
  });
});

describe('deleting chunks', () => {
  it("removes the caller's tenant's chunks named, from each project's partition, and leaves every other", async () => {
    const { tenantId, otherTenantId, chunks, otherChunks } = await twoTenants();
    const from = embedded.store.requests.length;
    await deleteChunks(tenantId, [
      { id: 'TSK-1-c1', projectId: 'PRJ-1' },
      { id: 'TSK-2-c0', projectId: 'PRJ-2' },
      // Gone already: a delete that finds nothing is done.
      { id: 'TSK-9-c0', projectId: 'PRJ-1' },
    ]);
    // The batch of PRJ-1 goes twice: Cosmos rolls it back for the delete that finds nothing.
    const partitions = new Set(writesIn(requestsSince(from)).map((write) => write.partitionKey));
    expect([...partitions].sort()).toEqual([JSON.stringify([tenantId, 'PRJ-1']), JSON.stringify([tenantId, 'PRJ-2'])]);
    expect(byId(await chunksOfSources(tenantId, ['PRJ-1', 'TSK-1', 'TSK-2']))).toEqual([summaryOf(chunks[0]!), summaryOf(chunks[1]!)]);
    expect(byId(await chunksOfSources(otherTenantId, ['PRJ-1', 'TSK-1', 'TSK-2']))).toEqual(otherChunks.map(summaryOf));
  });
});

describe("a tenant's chunks, a page at a time", () => {
  async function pagesOf(tenantId: string, projectIds: string[] | null, pageSize: number): Promise<StoredChunkSummary[][]> {
    const pages: StoredChunkSummary[][] = [];
    for await (const page of chunkPages(tenantId, projectIds, pageSize)) pages.push(page);
    return pages;
  }

  it("are all of the caller's tenant's chunks, or those of the projects named, none of another tenant", async () => {
    const { tenantId, otherTenantId, chunks, otherChunks } = await twoTenants();
    expect(byId((await pagesOf(tenantId, null, 100)).flat())).toEqual(chunks.map(summaryOf));
    expect(byId((await pagesOf(otherTenantId, null, 100)).flat())).toEqual(otherChunks.map(summaryOf));
    expect(byId((await pagesOf(tenantId, ['PRJ-2'], 100)).flat())).toEqual([summaryOf(chunks[3]!)]);
    expect(byId((await pagesOf(tenantId, ['PRJ-1', 'PRJ-9'], 100)).flat())).toEqual(chunks.slice(0, 3).map(summaryOf));
    expect(await pagesOf(tenantId, [], 100)).toEqual([]);
    expect(await pagesOf(randomUUID(), null, 100)).toEqual([]);
  });

  it("come in pages of the size asked, none empty, each chunk once, from the tenant's partitions only", async () => {
    const { tenantId, chunks } = await twoTenants();
    const from = embedded.store.requests.length;
    const pages = await pagesOf(tenantId, null, 3);
    expect(pages.map((page) => page.length)).toEqual([3, 1]);
    expect(byId(pages.flat())).toEqual(chunks.map(summaryOf));
    const queries = requestsSince(from).filter((request) => request.isQuery);
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) expect(query.partitionKey).toBe(JSON.stringify([tenantId]));
  });
});

describe("what a tenant's index holds", () => {
  it("is the tenant's sources and chunks, none of another tenant's, counted by the store in the tenant's partitions", async () => {
    const { tenantId, otherTenantId } = await twoTenants();
    // Another tenant with one source more, in a project of its own.
    await writeChunks(otherTenantId, [chunk(otherTenantId, { sourceId: 'TSK-3', projectId: 'PRJ-3' }, 0)]);
    const from = embedded.store.requests.length;
    // PRJ-1, TSK-1 (two chunks) and TSK-2.
    expect(await indexTotals(tenantId)).toEqual({ sources: 3, chunks: 4 });
    const queries = requestsSince(from).filter((request) => request.isQuery);
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) {
      expect(query.partitionKey).toBe(JSON.stringify([tenantId]));
      // Counted, not read: no chunk comes back to be counted here.
      expect(JSON.parse(query.body).query).toMatch(/^SELECT VALUE COUNT\(1\) FROM c WHERE c\.tenantId = @tenantId/);
    }
    expect(await indexTotals(otherTenantId)).toEqual({ sources: 4, chunks: 5 });
    expect(await indexTotals(randomUUID())).toEqual({ sources: 0, chunks: 0 });
  });

  it('counts a source whose chunks are spread over several once, by its first chunk', async () => {
    const tenantId = randomUUID();
    const source = { sourceType: 'project' as const, sourceId: 'PRJ-7', projectId: 'PRJ-7' };
    await writeChunks(
      tenantId,
      [0, 1, 2, 3].map((index) => chunk(tenantId, source, index)),
    );
    expect(await indexTotals(tenantId)).toEqual({ sources: 1, chunks: 4 });
  });
});
