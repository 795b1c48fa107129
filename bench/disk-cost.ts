/**
 * What keeping the embedded database on disk costs a create: `POST /api/projects` on a stack with a
 * data folder (each write committed to LMDB and synced before it is answered) next to the same on a
 * stack with none (in memory only), measured in alternating turns like the other throughput figures.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCAL_HOME_TENANT_ID } from '../local/defaults.js';
import { startStack, type LocalStack } from '../local/stack.js';
import { measureInTurns, type Server, type Side } from './api-throughput.js';

export interface DiskCost {
  inMemory: Side;
  durable: Side;
  /** Durable creates per second over in-memory ones. */
  throughputRatio: number;
  /** Durable p99 over in-memory p99. */
  p99Ratio: number;
}

const ratio = (of: number, to: number): number => Math.round((of / to) * 100) / 100;

async function serverOf(stack: LocalStack): Promise<Server> {
  const token = await stack.identityProvider!.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', roles: ['LMS.Admin'] });
  return { baseUrl: stack.apiBaseUrl, authorization: `Bearer ${token}`, pid: stack.hostPid };
}

export async function benchDiskCost(): Promise<DiskCost> {
  const settings = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AUTH_|COSMOS_|GRAPH_|EMBEDDINGS_|RAG_|AzureWebJobs)/.test(name)));
  // On the disk of the system's temporary folder, as `.local` would be on the project's.
  const dataDir = await mkdtemp(join(tmpdir(), 'lms-bench-disk-'));
  const stacks: LocalStack[] = [];
  try {
    const inMemory = await startStack({ apiPort: 0, identityProviderPort: 0, settings });
    stacks.push(inMemory);
    const durable = await startStack({ apiPort: 0, identityProviderPort: 0, dataDir, settings });
    stacks.push(durable);
    const create = { name: 'POST /api/projects', method: 'POST' as const, path: '/projects', body: JSON.stringify({ name: 'Load' }) };
    const [inMemorySide, durableSide] = (await measureInTurns([await serverOf(inMemory), await serverOf(durable)], create)) as [Side, Side];
    return {
      inMemory: inMemorySide,
      durable: durableSide,
      throughputRatio: ratio(durableSide.requestsPerSecond, inMemorySide.requestsPerSecond),
      p99Ratio: ratio(durableSide.p99Ms, Math.max(inMemorySide.p99Ms, 1)),
    };
  } finally {
    for (const stack of stacks.reverse()) await stack.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
