import type { OperationInput, SqlParameter } from '@azure/cosmos';
import { container } from './cosmos.js';
import { writeInBatches } from './batches.js';
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
  /** Present when an embeddings endpoint is configured. */
  embedding?: number[];
}

export interface StoredChunkSummary {
  id: string;
  contentHash: string;
  hasEmbedding: boolean;
}

const BULK_SIZE = 100;
const chunks = () => container('ragChunks');

function scope(tenantId: string, projectIds: readonly string[] | null) {
  const parameters: SqlParameter[] = [{ name: '@tenantId', value: tenantId }];
  let condition = 'c.tenantId = @tenantId';
  if (projectIds) {
    condition += ' AND ARRAY_CONTAINS(@projectIds, c.projectId)';
    parameters.push({ name: '@projectIds', value: [...projectIds] });
  }
  return { condition, parameters };
}

/** Id and hash of every chunk in scope: what a rebuild compares against, without reading content. */
export async function storedChunkSummaries(tenantId: string, projectIds: readonly string[] | null): Promise<StoredChunkSummary[]> {
  const { condition, parameters } = scope(tenantId, projectIds);
  const query = { query: `SELECT c.id, c.contentHash, IS_DEFINED(c.embedding) AS hasEmbedding FROM c WHERE ${condition}`, parameters };
  const { resources } = await (await chunks()).items.query<StoredChunkSummary>(query, { partitionKey: tenantId, maxItemCount: FULL_SCAN_PAGE }).fetchAll();
  return resources;
}

/** The stored vectors of these chunks, to carry over when a chunk is rewritten unchanged. */
export async function storedEmbeddings(tenantId: string, ids: readonly string[]): Promise<Map<string, number[]>> {
  const embeddings = new Map<string, number[]>();
  const index = await chunks();
  for (let start = 0; start < ids.length; start += BULK_SIZE) {
    const query = {
      query: 'SELECT c.id, c.embedding FROM c WHERE c.tenantId = @tenantId AND ARRAY_CONTAINS(@ids, c.id) AND IS_DEFINED(c.embedding)',
      parameters: [
        { name: '@tenantId', value: tenantId },
        { name: '@ids', value: ids.slice(start, start + BULK_SIZE) },
      ],
    };
    const { resources } = await index.items.query<{ id: string; embedding: number[] }>(query, { partitionKey: tenantId }).fetchAll();
    for (const { id, embedding } of resources) embeddings.set(id, embedding);
  }
  return embeddings;
}

export async function writeChunks(tenantId: string, documents: readonly ChunkDocument[]): Promise<void> {
  await writeInBatches(
    await chunks(),
    tenantId,
    documents.map((document): OperationInput => ({ operationType: 'Upsert', partitionKey: tenantId, resourceBody: asJson(document) })),
  );
}

export async function deleteChunks(tenantId: string, ids: readonly string[]): Promise<void> {
  await writeInBatches(
    await chunks(),
    tenantId,
    ids.map((id): OperationInput => ({ operationType: 'Delete', partitionKey: tenantId, id })),
  );
}
