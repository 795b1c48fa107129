import { projectPages } from '../data/projects-repository.js';
import { deleteChunks, storedChunkSummaries, storedEmbeddings, writeChunks, type Chunk, type ChunkDocument } from '../data/rag-chunks-repository.js';
import { taskPages } from '../data/tasks-repository.js';
import type { RagCounts, RagJob } from '../schemas/rag.js';
import { projectChunks, taskChunks } from './chunker.js';
import { createEmbedder, embeddingsSettings, type Embedder } from './embeddings.js';

const SOURCE_PAGE = 1_000;

let embedder: Embedder | null | undefined;

/** The embeddings client, or null when no endpoint is configured (embeddings are optional). */
function configuredEmbedder(): Embedder | null {
  if (embedder === undefined) {
    const settings = embeddingsSettings();
    embedder = settings ? createEmbedder(settings) : null;
  }
  return embedder;
}

/** The chunks the job's sources make, and how many sources there are. */
async function wantedChunks(tenantId: string, projectIds: readonly string[] | null): Promise<{ sources: number; chunks: Chunk[] }> {
  const chunks: Chunk[] = [];
  let sources = 0;
  for await (const page of projectPages(tenantId, projectIds, SOURCE_PAGE)) {
    sources += page.length;
    chunks.push(...page.flatMap(projectChunks));
  }
  for await (const page of taskPages(tenantId, projectIds, SOURCE_PAGE)) {
    sources += page.length;
    chunks.push(...page.flatMap(taskChunks));
  }
  return { sources, chunks };
}

/**
 * Brings the tenant's chunk index in line with its projects and tasks. Changed and new chunks are
 * written (a full rebuild writes every chunk), chunks whose source is gone are deleted, and all of
 * it happens in place: readers see each chunk either as it was or as it is now, never an empty or
 * half-built index. Running it twice does the work once: the second run finds nothing changed.
 * Embeddings are computed only for chunks whose content changed.
 */
export async function rebuildIndex(tenantId: string, job: Pick<RagJob, 'mode' | 'projectIds'>): Promise<RagCounts> {
  const [{ sources, chunks: wanted }, stored] = await Promise.all([wantedChunks(tenantId, job.projectIds), storedChunkSummaries(tenantId, job.projectIds)]);
  const storedById = new Map(stored.map((summary) => [summary.id, summary]));
  const embed = configuredEmbedder();

  const changed = wanted.filter((chunk) => {
    const existing = storedById.get(chunk.id);
    // A chunk stored before embeddings were configured counts as changed until it has its vector.
    return existing?.contentHash !== chunk.contentHash || (embed !== null && !existing.hasEmbedding);
  });
  const toWrite = job.mode === 'full' ? wanted : changed;
  const changedIds = new Set(changed.map((chunk) => chunk.id));

  const vectors = new Map<string, number[]>();
  if (embed) {
    const fresh = await embed.embed(changed.map((chunk) => chunk.content));
    changed.forEach((chunk, index) => vectors.set(chunk.id, fresh[index]!));
    const carried = toWrite.filter((chunk) => !changedIds.has(chunk.id)).map((chunk) => chunk.id);
    for (const [id, vector] of await storedEmbeddings(tenantId, carried)) vectors.set(id, vector);
  }

  await writeChunks(
    tenantId,
    toWrite.map((chunk): ChunkDocument => ({ ...chunk, tenantId, ...(vectors.has(chunk.id) ? { embedding: vectors.get(chunk.id)! } : {}) })),
  );
  const wantedIds = new Set(wanted.map((chunk) => chunk.id));
  const stale = stored.filter((summary) => !wantedIds.has(summary.id)).map((summary) => summary.id);
  await deleteChunks(tenantId, stale);

  return { sources, chunks: wanted.length, written: toWrite.length, unchanged: wanted.length - toWrite.length, deleted: stale.length };
}
