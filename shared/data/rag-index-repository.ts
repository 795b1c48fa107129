/**
 * The RAG index: one document per chunk, partitioned by tenant and then by project. Every query
 * names the tenant, both as the partition key's prefix and in its condition, so that no tenant's
 * chunks ever meet another's.
 */
import type { OperationInput, PartitionKey, SqlParameter } from '@azure/cosmos';
import { writeInBatches } from './batches.js';
import { container } from './cosmos.js';
import { asJson, FULL_SCAN_PAGE } from './tenant-data.js';

/** A piece of a project's or task's text, as the RAG index holds it. */
export interface Chunk {
  /** `<sourceId>-c<chunkIndex>`: stable, so a rebuild overwrites rather than duplicates. */
  id: string;
  sourceType: 'project' | 'task';
  sourceId: string;
  projectId: string;
  title: string;
  chunkIndex: number;
  content: string;
  /** Of everything the chunk says; a chunk whose hash is unchanged is neither rewritten nor embedded again. */
  contentHash: string;
  /** The source's updatedAt when the chunk was made. */
  updatedAt: string;
}

/** A chunk as the index stores it. */
export interface ChunkDocument extends Chunk {
  tenantId: string;
  /** The job that last wrote it: a batch run again after a crash knows what its first run wrote. */
  jobId: string;
  /** Present when an embeddings endpoint is configured. */
  embedding?: number[];
}

/** What a rebuild compares a chunk by, without reading its content. */
export interface StoredChunkSummary {
  id: string;
  sourceType: Chunk['sourceType'];
  sourceId: string;
  projectId: string;
  contentHash: string;
  hasEmbedding: boolean;
  jobId: string | undefined;
}

/** Where a chunk lives: a chunk is identified by its id within its tenant and project. */
export type ChunkPlace = Pick<Chunk, 'id' | 'projectId'>;

const index = () => container('ragIndex');
const SUMMARY = 'c.id, c.sourceType, c.sourceId, c.projectId, c.contentHash, IS_DEFINED(c.embedding) AS hasEmbedding, c.jobId';

async function queryTenant<T>(tenantId: string, select: string, condition: string, parameters: SqlParameter[]): Promise<T[]> {
  const query = {
    query: `SELECT ${select} FROM c WHERE c.tenantId = @tenantId AND ${condition}`,
    parameters: [{ name: '@tenantId', value: tenantId }, ...parameters],
  };
  const { resources } = await (await index()).items.query<T>(query, { partitionKey: [tenantId], maxItemCount: FULL_SCAN_PAGE }).fetchAll();
  return resources;
}

/** The stored chunks of these sources, by id and hash. */
export function chunksOfSources(tenantId: string, sourceIds: readonly string[]): Promise<StoredChunkSummary[]> {
  return queryTenant(tenantId, SUMMARY, 'ARRAY_CONTAINS(@sourceIds, c.sourceId)', [{ name: '@sourceIds', value: [...sourceIds] }]);
}

/** The stored vectors of these chunks, to carry over when a chunk is rewritten unchanged. */
export async function storedEmbeddings(tenantId: string, ids: readonly string[]): Promise<Map<string, number[]>> {
  if (ids.length === 0) return new Map();
  const found = await queryTenant<{ id: string; embedding: number[] }>(
    tenantId,
    'c.id, c.embedding',
    'ARRAY_CONTAINS(@ids, c.id) AND IS_DEFINED(c.embedding)',
    [{ name: '@ids', value: [...ids] }],
  );
  return new Map(found.map(({ id, embedding }) => [id, embedding]));
}

/** What a tenant's index holds: its sources (projects and tasks) and its chunks. */
export interface IndexTotals {
  sources: number;
  chunks: number;
}

async function countTenant(tenantId: string, condition: string): Promise<number> {
  const query = { query: `SELECT VALUE COUNT(1) FROM c WHERE c.tenantId = @tenantId${condition}`, parameters: [{ name: '@tenantId', value: tenantId }] };
  const { resources } = await (await index()).items.query<number>(query, { partitionKey: [tenantId] }).fetchAll();
  // Over several physical partitions the SDK sums the partitions' counts into one.
  return resources[0] ?? 0;
}

/**
 * What the tenant's whole index holds, counted by Cosmos (nothing read into memory). Every source has
 * a chunk 0 as long as it has chunks (a source's chunks are numbered from 0, and the shortest source
 * makes one), so its sources are its chunks 0. (Counting distinct `sourceId`s would take a DISTINCT
 * subquery under COUNT: the JavaScript SDK does not offer Cosmos the query feature that needs across
 * partitions, `DCount`, and the embedded store parses neither DISTINCT nor a subquery in FROM.)
 */
export async function indexTotals(tenantId: string): Promise<IndexTotals> {
  const [sources, chunks] = await Promise.all([countTenant(tenantId, ' AND c.chunkIndex = 0'), countTenant(tenantId, '')]);
  return { sources, chunks };
}

/** Operations grouped by the logical partition (tenant, project) they go to: a transactional batch stays within one. */
async function writeByProject(
  tenantId: string,
  items: readonly { projectId: string }[],
  operation: (item: never, partitionKey: PartitionKey) => OperationInput,
): Promise<void> {
  const byProject = new Map<string, { projectId: string }[]>();
  for (const item of items) byProject.set(item.projectId, [...(byProject.get(item.projectId) ?? []), item]);
  const chunks = await index();
  for (const [projectId, group] of byProject) {
    const partitionKey: PartitionKey = [tenantId, projectId];
    await writeInBatches(
      chunks,
      partitionKey,
      group.map((item) => operation(item as never, partitionKey)),
    );
  }
}

export function writeChunks(tenantId: string, documents: readonly ChunkDocument[]): Promise<void> {
  return writeByProject(tenantId, documents, (document: ChunkDocument, partitionKey) => ({
    operationType: 'Upsert',
    partitionKey,
    resourceBody: asJson(document),
  }));
}

export function deleteChunks(tenantId: string, chunks: readonly ChunkPlace[]): Promise<void> {
  return writeByProject(tenantId, chunks, (chunk: ChunkPlace, partitionKey) => ({ operationType: 'Delete', partitionKey, id: chunk.id }));
}

/**
 * The tenant's chunks (of these projects only, when given), a page at a time, by what they belong
 * to: the final step of a job compares them with the sources without holding the index in memory.
 */
export async function* chunkPages(tenantId: string, projectIds: readonly string[] | null, pageSize: number): AsyncGenerator<StoredChunkSummary[]> {
  const scope = projectIds ? ' AND ARRAY_CONTAINS(@projectIds, c.projectId)' : '';
  const query = {
    query: `SELECT ${SUMMARY} FROM c WHERE c.tenantId = @tenantId${scope}`,
    parameters: [{ name: '@tenantId', value: tenantId }, ...(projectIds ? [{ name: '@projectIds', value: [...projectIds] }] : [])],
  };
  const pages = (await index()).items.query<StoredChunkSummary>(query, { partitionKey: [tenantId], maxItemCount: pageSize });
  while (pages.hasMoreResults()) {
    const { resources } = await pages.fetchNext();
    if (resources.length) yield resources;
  }
}
