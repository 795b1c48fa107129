/**
 * The RAG rebuild at tenant sizes: jobs started through the API of a local stack on seeded data,
 * their time to Succeeded, the sources per second of one instance against two (two local hosts on
 * the same queue), the peak memory of the instance at 20,000 and at 200,000 sources (it must not
 * grow with the tenant), and 200,000 sources embedded by a stand-in at a fixed rate limit.
 */
import { readFile } from 'node:fs/promises';
import type { OperationInput } from '@azure/cosmos';
import { LOCAL_HOME_TENANT_ID } from '../local/defaults.js';
import { startEmbeddingsStandIn } from '../test/support/embeddings-stand-in.js';
import { startHostProcess, startStack, type LocalStack } from '../local/stack.js';
import { writeInBatches } from '../shared/data/batches.js';
import { taskDocument } from '../shared/data/tasks-repository.js';

export interface RagRun {
  sources: number;
  instances: number;
  embeddings: string;
  seconds: number;
  sourcesPerSecond: number;
  written: number;
  peakRssMiB: number;
}

export interface RagRebuildFigures {
  runs: RagRun[];
  /** Two instances' sources per second over one's, on the same data. */
  speedUp: number;
  /** Peak memory of the instance at the largest size over the smallest: the goal is at most 1.2. */
  peakRssRatio: number;
}

const TENANT = LOCAL_HOME_TENANT_ID;
/** A project has this many tasks: 20,000 sources are 4,000 projects and 16,000 tasks. */
const TASKS_PER_PROJECT = 4;
/** The embeddings stand-in's rate limit in the run that embeds: about what a small Azure OpenAI deployment allows. */
const EMBEDDINGS_PER_SECOND = 40;

function sentence(index: number): string {
  return `Step ${index} of the course explains one more idea in a few plain words.`;
}

/** Projects and tasks straight into the database, as a tenant of that size would have them. */
async function seed(stack: LocalStack, sources: number): Promise<void> {
  const now = new Date().toISOString();
  const projects = Math.round(sources / (TASKS_PER_PROJECT + 1));
  const documents: Record<string, unknown>[] = [];
  for (let index = 0; index < projects; index++) {
    // Every tenth project has a description long enough for several chunks.
    const description = Array.from({ length: index % 10 === 0 ? 60 : 3 }, (_, step) => sentence(step)).join(' ');
    const common = { tenantId: TENANT, status: 'Active', createdAt: now, updatedAt: now, createdBy: 'bench' };
    documents.push({
      ...common,
      id: `PRJ-${1001 + index}`,
      type: 'project',
      name: `Course ${index}`,
      nameSort: `course ${index}`,
      description,
      owner: 'o@contoso.test',
      members: ['o@contoso.test'],
    });
  }
  for (let index = 0; index < sources - projects; index++) {
    documents.push(
      taskDocument(
        TENANT,
        1001 + index,
        { projectId: `PRJ-${1001 + (index % projects)}`, title: `Lesson ${index}`, description: sentence(index) },
        'bench',
        now,
      ),
    );
  }
  const operations = documents.map((resourceBody): OperationInput => ({ operationType: 'Create', partitionKey: TENANT, resourceBody: resourceBody as never }));
  await writeInBatches(stack.cosmos!.client.database('lms').container('tenant-data'), TENANT, operations);
}

async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1]) / 1024);
}

/** A full rebuild through the API, to the job's end. */
async function rebuild(stack: LocalStack, authorization: string): Promise<{ seconds: number; written: number; sources: number }> {
  const started = performance.now();
  const response = await fetch(`${stack.apiBaseUrl}/rag/index`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ mode: 'full' }),
  });
  const { jobId } = (await response.json()) as { jobId: string };
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const answer = await fetch(`${stack.apiBaseUrl}/rag/jobs/${jobId}`, { headers: { authorization } });
    // A busy embedded store can make a read time out (503): a client asks again, as it would of Azure.
    if (answer.status === 503 || answer.status === 429) {
      await answer.body?.cancel();
      continue;
    }
    const job = (await answer.json()) as {
      status: string;
      error: string | null;
      counts: { sources: number; written: number } | null;
    };
    if (job.status === 'Succeeded') return { seconds: (performance.now() - started) / 1000, written: job.counts!.written, sources: job.counts!.sources };
    if (job.status !== 'Running' && job.status !== 'Queued') throw new Error(`The bench's RAG job ended ${job.status}: ${job.error}`);
  }
}

/** A fresh stack with `sources` seeded, and as many instances as asked; runs one full rebuild. */
async function measure(sources: number, options: { instances: number; embeddings?: boolean }): Promise<RagRun> {
  const standIn = options.embeddings ? await startEmbeddingsStandIn({ apiKey: 'bench', requestsPerSecond: EMBEDDINGS_PER_SECOND }) : undefined;
  const embeddings = standIn ? { EMBEDDINGS_ENDPOINT: standIn.url, EMBEDDINGS_API_KEY: 'bench', EMBEDDINGS_MODEL: 'bench' } : {};
  const settings = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(AUTH_|COSMOS_|GRAPH_|EMBEDDINGS_|RAG_|WEBHOOKS_|AzureWebJobs)/.test(name)),
  );
  const stack = await startStack({ apiPort: 0, identityProviderPort: 0, settings: { ...settings, ...embeddings } });
  const extra: { stop(): Promise<void> }[] = [];
  try {
    await seed(stack, sources);
    for (let instance = 1; instance < options.instances; instance++) {
      extra.push(await startHostProcess({ port: 0, environment: stack.environment, extraCaCerts: stack.caCertPath }));
    }
    const authorization = `Bearer ${await stack.identityProvider!.issueToken({ tenantId: TENANT, kind: 'user', roles: ['LMS.Admin'] })}`;
    const run = await rebuild(stack, authorization);
    return {
      sources: run.sources,
      instances: options.instances,
      embeddings: standIn ? `stand-in, ${EMBEDDINGS_PER_SECOND} requests/s` : 'off',
      seconds: Math.round(run.seconds * 10) / 10,
      sourcesPerSecond: Math.round(run.sources / run.seconds),
      written: run.written,
      peakRssMiB: await peakRssMiB(stack.hostPid),
    };
  } finally {
    for (const host of extra) await host.stop();
    await stack.stop();
    await standIn?.close();
  }
}

export async function benchRagRebuild(sizes = { small: 20_000, large: 200_000 }): Promise<RagRebuildFigures> {
  const small = await measure(sizes.small, { instances: 1 });
  const smallTwice = await measure(sizes.small, { instances: 2 });
  const large = await measure(sizes.large, { instances: 1 });
  const embedded = await measure(sizes.large, { instances: 1, embeddings: true });
  return {
    runs: [small, smallTwice, large, embedded],
    speedUp: Math.round((smallTwice.sourcesPerSecond / small.sourcesPerSecond) * 100) / 100,
    peakRssRatio: Math.round((large.peakRssMiB / small.peakRssMiB) * 100) / 100,
  };
}
