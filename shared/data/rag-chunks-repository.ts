import type { OperationInput, SqlParameter } from '@azure/cosmos';
import type { Chunk } from '../rag/chunker.js';
import { container } from './cosmos.js';
import { asJson } from './tenant-data.js';

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
  const { resources } = await (await chunks()).items.query<StoredChunkSummary>(query, { partitionKey: tenantId, maxItemCount: 1000 }).fetchAll();
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

async function runBulk(operations: OperationInput[]): Promise<void> {
  const index = await chunks();
  for (let start = 0; start < operations.length; start += BULK_SIZE) {
    const results = await index.items.executeBulkOperations(operations.slice(start, start + BULK_SIZE));
    // A chunk already gone is what a delete wants; anything else failing must fail the job.
    const failed = results.find((result) => result.error || ((result.response?.statusCode ?? 0) >= 400 && result.response?.statusCode !== 404));
    if (failed) throw new Error(`Writing the RAG index failed: ${failed.error?.message ?? failed.response?.statusCode}`);
  }
}

export async function writeChunks(documents: readonly ChunkDocument[]): Promise<void> {
  await runBulk(documents.map((document) => ({ operationType: 'Upsert', partitionKey: document.tenantId, resourceBody: asJson(document) })));
}

export async function deleteChunks(tenantId: string, ids: readonly string[]): Promise<void> {
  await runBulk(ids.map((id) => ({ operationType: 'Delete', partitionKey: tenantId, id })));
}
