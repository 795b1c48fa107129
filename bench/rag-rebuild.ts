/**
 * The RAG rebuild figure: a full rebuild of 10,000 projects and 50,000 tasks on the embedded
 * Cosmos DB, in sources per second, then an incremental rebuild of the same data with nothing
 * changed (which must write 0 chunks). The rebuild runs in this process against a fresh emulator.
 */
import { performance } from 'node:perf_hooks';
import type { OperationInput } from '@azure/cosmos';
import { startCosmosEmulator } from '../local/cosmos-emulator.js';
import { writeInBatches } from '../shared/data/batches.js';
import { loadOrCreateTlsCertificate } from '../local/tls.js';

export interface RagRebuildFigures {
  projects: number;
  tasks: number;
  full: { seconds: number; sourcesPerSecond: number; written: number; chunks: number };
  incremental: { seconds: number; written: number; unchanged: number; deleted: number };
}

const TENANT = '00000000-0000-4000-8000-00000000bec4';

function sentence(index: number): string {
  return `Step ${index} of the course explains one more idea in a few plain words.`;
}

/** `tlsDir` holds the certificate this process trusts (NODE_EXTRA_CA_CERTS), so the app's own client can reach the emulator. */
export async function benchRagRebuild(tlsDir: string, counts = { projects: 10_000, tasks: 50_000 }): Promise<RagRebuildFigures> {
  const tls = await loadOrCreateTlsCertificate(tlsDir);
  const emulator = await startCosmosEmulator({ port: 0, host: '127.0.0.1', database: 'lms', tls });
  try {
    // The app reads its settings from the environment, as in Azure; it must trust the emulator's certificate.
    Object.assign(process.env, { COSMOS_ENDPOINT: emulator.endpoint, COSMOS_KEY: emulator.key });
    const now = new Date().toISOString();
    const documents: Record<string, unknown>[] = [];
    for (let index = 0; index < counts.projects; index++) {
      const id = `PRJ-${1001 + index}`;
      // Every tenth project has a description long enough for several chunks.
      const description = Array.from({ length: index % 10 === 0 ? 60 : 3 }, (_, step) => sentence(step)).join(' ');
      documents.push({
        id,
        tenantId: TENANT,
        type: 'project',
        name: `Course ${index}`,
        nameSort: `course ${index}`,
        description,
        status: 'Active',
        owner: 'o@contoso.test',
        members: ['o@contoso.test'],
        createdAt: now,
        updatedAt: now,
        createdBy: 'bench',
      });
    }
    for (let index = 0; index < counts.tasks; index++) {
      documents.push({
        id: `TSK-${1001 + index}`,
        tenantId: TENANT,
        type: 'task',
        projectId: `PRJ-${1001 + (index % counts.projects)}`,
        title: `Lesson ${index}`,
        description: sentence(index),
        status: 'Todo',
        priority: 'Medium',
        priorityRank: 2,
        assignee: null,
        dueDate: null,
        createdAt: now,
        updatedAt: now,
        createdBy: 'bench',
      });
    }
    const operations = documents.map((resourceBody): OperationInput => ({
      operationType: 'Create',
      partitionKey: TENANT,
      resourceBody: resourceBody as never,
    }));
    await writeInBatches(emulator.client.database('lms').container('tenant-data'), TENANT, operations);

    const { rebuildIndex } = await import('../shared/rag/rebuild.js');
    let started = performance.now();
    const full = await rebuildIndex(TENANT, { mode: 'full', projectIds: null });
    const fullSeconds = (performance.now() - started) / 1000;
    started = performance.now();
    const incremental = await rebuildIndex(TENANT, { mode: 'incremental', projectIds: null });
    const incrementalSeconds = (performance.now() - started) / 1000;
    return {
      projects: counts.projects,
      tasks: counts.tasks,
      full: { seconds: round(fullSeconds), sourcesPerSecond: Math.round(full.sources / fullSeconds), written: full.written, chunks: full.chunks },
      incremental: { seconds: round(incrementalSeconds), written: incremental.written, unchanged: incremental.unchanged, deleted: incremental.deleted },
    };
  } finally {
    await emulator.close();
  }
}

const round = (value: number) => Math.round(value * 100) / 100;
