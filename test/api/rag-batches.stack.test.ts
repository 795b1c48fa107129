/**
 * The RAG rebuild at tenant size, over HTTP and the real queue: a tenant of 1,204 sources (4 projects
 * of 300 tasks) is planned into batches of 500 that run side by side on hosts of this file's own, with
 * a tenant of their own and a queue of their own, against the embeddings stand-in. What is checked is
 * what an operator would: progress, exact counts, and what the index holds, whatever happens to the
 * messages, the host or the embeddings API on the way.
 */
import { randomUUID } from 'node:crypto';
import { CosmosClient } from '@azure/cosmos';
import { QueueClient } from '@azure/storage-queue';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startEmbeddingsStandIn, type EmbeddingsStandIn } from '../support/embeddings-stand-in.js';
import { startIdentityProvider, type IdentityProvider } from '../../local/identity/provider.js';
import { ownTenantsSettings, startOwnHost, stopOwnHosts } from '../support/own-hosts.js';
import { apiAt, CLIENT_ID, ownDatabase, stack, stackAppSettings, uniqueEmail } from '../support/stack.js';

const TENANT = randomUUID();
const NEIGHBOUR = randomUUID();
const PROJECTS = 4;
const TASKS_PER_PROJECT = 300;
const SOURCES = PROJECTS * (1 + TASKS_PER_PROJECT);
// Projects make one batch; 1,200 tasks make three of at most 500.
const BATCHES = 4;
const EVERYTHING_WRITTEN = { sources: SOURCES, chunks: SOURCES, written: SOURCES, unchanged: 0, deleted: 0 };

// An app of this file's own: its data, its change feed and its queues.
const own = { ...stackAppSettings, ...(await ownDatabase()) };
const database = new CosmosClient({ endpoint: stack.cosmosEndpoint, key: stack.cosmosKey }).database(own.COSMOS_DATABASE);
const index = database.container('rag-index');
const tenantData = database.container('tenant-data');

type Progress = { sources: number; batches: number; batchesDone: number };
type Job = {
  jobId: string;
  status: string;
  progress: Progress | null;
  cancelRequestedAt: string | null;
  counts: typeof EVERYTHING_WRITTEN | null;
  error: string | null;
};

let provider: IdentityProvider;
let standIn: EmbeddingsStandIn;
const tokens: Record<string, string> = {};

/** A host of this file's own on its own database and the shared storage, serving this file's tenants. */
async function startHost(queue: string, environment: Record<string, string> = {}) {
  const host = await startOwnHost({
    ...own,
    ...ownTenantsSettings(provider.authorityHost, TENANT, NEIGHBOUR),
    RAG_QUEUE_NAME: queue,
    EMBEDDINGS_ENDPOINT: standIn.url,
    EMBEDDINGS_API_KEY: 'test-key',
    EMBEDDINGS_MODEL: 'text-embedding-3-small',
    AzureFunctionsJobHost__extensions__queues__visibilityTimeout: '00:00:01',
    AzureFunctionsJobHost__extensions__queues__maxPollingInterval: '00:00:00.2',
    ...environment,
  });
  return { ...host, call: apiAt(host.url) };
}

type Host = Awaited<ReturnType<typeof startHost>>;
const QUEUE = `rag-batches-${randomUUID().slice(0, 8)}`;
let main: Host;

async function readJob(host: Host, jobId: string, tenant: string = TENANT): Promise<Job> {
  const response = await host.call('GET', `/rag/jobs/${jobId}`, { token: tokens[tenant] });
  expect(response.status).toBe(200);
  return response.body as Job;
}

/** Jobs started and not yet seen to end: a test that fails part way should leave none running for the next. */
const unfinished = new Map<string, string>();

async function start(host: Host, body: Record<string, unknown> = {}, tenant: string = TENANT): Promise<Job> {
  const response = await host.call('POST', '/rag/index', { token: tokens[tenant], body });
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  unfinished.set((response.body as Job).jobId, tenant);
  return response.body as Job;
}

/** Polls the job until `done` holds, keeping every state seen. */
async function until(host: Host, jobId: string, done: (job: Job) => boolean, tenant: string = TENANT): Promise<Job[]> {
  const seen: Job[] = [];
  const deadline = Date.now() + 90_000;
  for (;;) {
    const current = await readJob(host, jobId, tenant);
    seen.push(current);
    if (ended(current)) unfinished.delete(jobId);
    if (done(current)) return seen;
    if (Date.now() > deadline) throw new Error(`Job ${jobId} is still ${current.status}: ${JSON.stringify(current)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const ended = (job: Job) => ['Succeeded', 'Failed', 'Cancelled'].includes(job.status);
const planned = (job: Job) => ended(job) || job.progress?.batches === BATCHES;

async function finished(host: Host, jobId: string, tenant: string = TENANT): Promise<Job> {
  return (await until(host, jobId, ended, tenant)).at(-1)!;
}

type StoredChunk = { id: string; projectId: string; tenantId: string; jobId: string; content: string; _etag: string };

async function chunksOf(tenant: string): Promise<StoredChunk[]> {
  const query = {
    query: 'SELECT c.id, c.projectId, c.tenantId, c.jobId, c.content, c._etag FROM c WHERE c.tenantId = @tenant',
    parameters: [{ name: '@tenant', value: tenant }],
  };
  return (await index.items.query<StoredChunk>(query, { partitionKey: [tenant] }).fetchAll()).resources;
}

/** Empties the tenant's index, so that the next rebuild has every chunk to embed and write. */
async function emptyIndex(tenant: string = TENANT): Promise<void> {
  const chunks = await chunksOf(tenant);
  for (let start = 0; start < chunks.length; start += 100) {
    await Promise.all(chunks.slice(start, start + 100).map((chunk) => index.item(chunk.id, [tenant, chunk.projectId]).delete()));
  }
}

type Batch = { number: number; status: string; sourceIds: string[]; counts: typeof EVERYTHING_WRITTEN | null };

async function batchesOf(tenant: string, jobId: string): Promise<Batch[]> {
  const query = {
    query: "SELECT c.number, c.status, c.sourceIds, c.counts FROM c WHERE c.type = 'ragBatch' AND c.jobId = @jobId",
    parameters: [{ name: '@jobId', value: jobId }],
  };
  return (await tenantData.items.query<Batch>(query, { partitionKey: tenant }).fetchAll()).resources;
}

async function send(queueName: string, message: object): Promise<void> {
  await new QueueClient(stack.storageConnectionString, queueName).sendMessage(Buffer.from(JSON.stringify(message)).toString('base64'));
}

/** Makes `count` calls, `parallel` at a time. */
async function inParallel(count: number, parallel: number, call: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) await call(next++);
    }),
  );
}

let neighbourProject: string;

beforeAll(async () => {
  provider = await startIdentityProvider({ tenants: [TENANT, NEIGHBOUR], clientId: CLIENT_ID, tls: stack.tls });
  for (const tenant of [TENANT, NEIGHBOUR]) tokens[tenant] = await provider.issueToken({ tenantId: tenant, kind: 'user', roles: ['LMS.Admin'] });
  standIn = await startEmbeddingsStandIn({ apiKey: 'test-key' });
  main = await startHost(QUEUE);

  const projects: string[] = [];
  for (let number = 0; number < PROJECTS; number++) {
    const created = await main.call('POST', '/projects', { token: tokens[TENANT], body: { name: `Course ${number}`, owner: uniqueEmail() } });
    projects.push(created.body.id as string);
  }
  await inParallel(PROJECTS * TASKS_PER_PROJECT, 16, async (number) => {
    const body = { projectId: projects[number % PROJECTS], title: `Lesson ${number}`, description: `Part ${number} of the course.` };
    const created = await main.call('POST', '/tasks', { token: tokens[TENANT], body });
    expect(created.status).toBe(201);
  });
  const neighbour = await main.call('POST', '/projects', { token: tokens[NEIGHBOUR], body: { name: 'Course 0', owner: uniqueEmail() } });
  neighbourProject = neighbour.body.id as string;
  await main.call('POST', '/tasks', { token: tokens[NEIGHBOUR], body: { projectId: neighbourProject, title: 'Lesson 0' } });
}, 120_000);

beforeEach(() => {
  standIn.setLatency(0);
  standIn.failNext(0);
});

afterEach(async () => {
  for (const [jobId, tenant] of unfinished) {
    unfinished.delete(jobId);
    // Every host of this file shares the database, so the main one can cancel any job; its own host's worker ends it.
    const cancelled = await main.call('POST', `/rag/jobs/${jobId}/cancel`, { token: tokens[tenant] });
    if (cancelled.status === 202) await until(main, jobId, ended, tenant);
  }
});

afterAll(async () => {
  await stopOwnHosts();
  await standIn?.close();
  await provider?.close();
});

// Each test runs whole rebuilds of 1,204 sources: on a busy machine that takes longer than the default timeout.
describe('a rebuild of 1,204 sources', { timeout: 120_000 }, () => {
  it('goes through 4 batches, its progress only ever increasing, and ends with exact counts', async () => {
    const before = standIn.counts.inputs;
    const { jobId } = await start(main);
    const seen = await until(main, jobId, ended);
    const job = seen.at(-1)!;
    expect(job).toMatchObject({ status: 'Succeeded', counts: EVERYTHING_WRITTEN, progress: { sources: SOURCES, batches: BATCHES, batchesDone: BATCHES } });
    const progress = seen.map((state) => state.progress).filter((state): state is Progress => state !== null);
    expect(progress.length).toBeGreaterThan(1);
    for (const [earlier, later] of progress.slice(1).map((state, at) => [progress[at]!, state] as const)) {
      expect(later.sources).toBeGreaterThanOrEqual(earlier.sources);
      expect(later.batches).toBeGreaterThanOrEqual(earlier.batches);
      expect(later.batchesDone).toBeGreaterThanOrEqual(earlier.batchesDone);
    }
    expect((await batchesOf(TENANT, jobId)).map((batch) => batch.sourceIds.length).sort((a, b) => a - b)).toEqual([4, 200, 500, 500]);
    expect(standIn.counts.inputs - before).toBe(SOURCES);
    expect(await chunksOf(TENANT)).toHaveLength(SOURCES);

    // Nothing changed: nothing is written or embedded again.
    const again = await finished(main, (await start(main)).jobId);
    expect(again.counts).toEqual({ sources: SOURCES, chunks: SOURCES, written: 0, unchanged: SOURCES, deleted: 0 });
    expect(standIn.counts.inputs - before).toBe(SOURCES);
  });

  it('counts every batch once, though each batch message, the planning and the finishing are delivered twice', async () => {
    await emptyIndex();
    // Slow enough that the second deliveries arrive while the first still run.
    standIn.setLatency(40);
    const embeddedBefore = standIn.counts.inputs;
    const { jobId } = await start(main);
    expect((await until(main, jobId, planned)).at(-1)!.status).toBe('Running');
    for (let batch = 0; batch < BATCHES; batch++) await send(QUEUE, { jobId, tenantId: TENANT, batch });
    await send(QUEUE, { jobId, tenantId: TENANT });
    await send(QUEUE, { jobId, tenantId: TENANT, finish: true });
    const job = await finished(main, jobId);
    expect(job).toMatchObject({ status: 'Succeeded', counts: EVERYTHING_WRITTEN, progress: { batches: BATCHES, batchesDone: BATCHES } });
    // Messages for a job that has ended change nothing either.
    for (let batch = 0; batch < BATCHES; batch++) await send(QUEUE, { jobId, tenantId: TENANT, batch });
    await send(QUEUE, { jobId, tenantId: TENANT, finish: true });
    const queue = new QueueClient(stack.storageConnectionString, QUEUE);
    await expect.poll(async () => (await queue.getProperties()).approximateMessagesCount, { timeout: 15_000, interval: 200 }).toBe(0);
    expect(await readJob(main, jobId)).toEqual(job);
    expect(await chunksOf(TENANT)).toHaveLength(SOURCES);
    // A batch delivered twice, even while its first delivery still runs, does its work once.
    expect(standIn.counts.inputs - embeddedBefore).toBe(SOURCES);
  });

  it('finishes with exact counts after its host is killed mid-job, and does not embed the batches done before again', async () => {
    await emptyIndex();
    // The app's hosts for this test: the doomed one, then the one started after the kill. The main host
    // stops first, so that the doomed one holds the relay's lease and the queue's messages alone.
    await main.stop();
    // Messages a killed host held come back after this lease, as they do after Azure's ten minutes.
    const environment = { LOCAL_QUEUE_MESSAGE_LEASE: '3', AzureFunctionsJobHost__extensions__queues__batchSize: '2' };
    const doomed = await startHost(QUEUE, environment);
    standIn.setLatency(25);
    const { jobId } = await start(doomed);
    await until(doomed, jobId, (state) => (state.progress?.batchesDone ?? 0) >= 1);
    await doomed.kill();
    const doneBefore = (await batchesOf(TENANT, jobId)).filter((batch) => batch.status === 'Done');
    expect(doneBefore.length).toBeGreaterThanOrEqual(1);
    expect(doneBefore.length).toBeLessThan(BATCHES);
    const writtenBefore = new Map((await chunksOf(TENANT)).map((chunk) => [chunk.id, chunk]));
    const requestsBefore = standIn.received.length;

    const restarted = await startHost(QUEUE, environment);
    const job = await finished(restarted, jobId);
    await restarted.stop();
    main = await startHost(QUEUE);
    expect(job).toMatchObject({ status: 'Succeeded', counts: EVERYTHING_WRITTEN, progress: { batches: BATCHES, batchesDone: BATCHES } });
    // After the restart, each chunk is embedded at most once, and none that was written before. (A
    // write the dead host had sent may still land after the count above: its chunk is not embedded again either.)
    const embeddedAfter = standIn.received.slice(requestsBefore).flatMap((request) => (request.status === 200 ? (request.inputs ?? []) : []));
    expect(new Set(embeddedAfter).size).toBe(embeddedAfter.length);
    const contentBefore = new Set([...writtenBefore.values()].map((chunk) => chunk.content));
    expect(embeddedAfter.filter((text) => contentBefore.has(text))).toEqual([]);
    const withoutEmbedding = {
      query: 'SELECT VALUE c.id FROM c WHERE c.tenantId = @tenant AND NOT IS_DEFINED(c.embedding)',
      parameters: [{ name: '@tenant', value: TENANT }],
    };
    expect((await index.items.query(withoutEmbedding, { partitionKey: [TENANT] }).fetchAll()).resources).toEqual([]);
    const after = new Map((await chunksOf(TENANT)).map((chunk) => [chunk.id, chunk._etag]));
    expect(after.size).toBe(SOURCES);
    for (const batch of doneBefore) {
      for (const sourceId of batch.sourceIds) expect(after.get(`${sourceId}-c0`)).toBe(writtenBefore.get(`${sourceId}-c0`)?._etag);
    }
  });

  it('is cancelled mid-job: the answer says so at once, the batches not started do nothing, the job ends Cancelled, a second cancel is a 409', async () => {
    await emptyIndex();
    // One message at a time (host.json's newBatchThreshold would fetch more while one runs), so that
    // batches wait on the queue while the first runs; the main host stops for it, so that this host
    // alone takes the queue's messages.
    await main.stop();
    const oneAtATime = await startHost(QUEUE, {
      AzureFunctionsJobHost__extensions__queues__batchSize: '1',
      AzureFunctionsJobHost__extensions__queues__newBatchThreshold: '0',
    });
    standIn.setLatency(60);
    const { jobId } = await start(oneAtATime);
    // Every batch planned, and at most the first one started.
    await until(oneAtATime, jobId, planned);
    const cancelled = await oneAtATime.call('POST', `/rag/jobs/${jobId}/cancel`, { token: tokens[TENANT] });
    expect(cancelled.status).toBe(202);
    expect(cancelled.body).toMatchObject({ jobId, status: 'Running', cancelRequestedAt: expect.any(String) });
    const job = await finished(oneAtATime, jobId);
    await oneAtATime.stop();
    main = await startHost(QUEUE);
    expect(job).toMatchObject({ status: 'Cancelled', counts: null, error: null, cancelRequestedAt: cancelled.body.cancelRequestedAt });
    expect(job.progress!.batchesDone).toBe(job.progress!.batches);
    // The work not done: the index holds the chunks of the batches that ran before the cancel, and
    // nothing of those that were still waiting.
    const ran = (await batchesOf(TENANT, jobId)).filter((batch) => batch.counts!.sources > 0);
    expect(ran.length).toBeLessThan(BATCHES);
    expect((await chunksOf(TENANT)).length).toBe(ran.reduce((sum, batch) => sum + batch.sourceIds.length, 0));

    const again = await main.call('POST', `/rag/jobs/${jobId}/cancel`, { token: tokens[TENANT] });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      status: 409,
      error: 'Conflict',
      message: `RAG job ${jobId} has already ended (Cancelled): there is nothing to cancel.`,
    });
    // The tenant is free for the next job, which picks up where the cancelled one stopped.
    standIn.setLatency(0);
    expect(await finished(main, (await start(main)).jobId)).toMatchObject({ status: 'Succeeded', counts: { sources: SOURCES, chunks: SOURCES } });
  });

  it('finishes when the embeddings API throttles with Retry-After, no invocation waiting it out, and nothing embedded twice', async () => {
    await emptyIndex();
    // Long against the seconds a batch takes even on a busy machine, so that an invocation that waited it out would show.
    const retryAfterSeconds = 15;
    standIn.failNext(3, 429, retryAfterSeconds);
    const embeddedBefore = standIn.counts.inputs;
    const throttledBefore = standIn.received.filter((request) => request.status === 429).length;
    const { jobId } = await start(main);
    const job = await finished(main, jobId);
    expect(job).toMatchObject({ status: 'Succeeded', counts: EVERYTHING_WRITTEN });
    expect(standIn.received.filter((request) => request.status === 429).length - throttledBefore).toBe(3);
    expect(standIn.counts.inputs - embeddedBefore).toBe(SOURCES);
    const durations = main.lines
      .filter((line) => line.includes("Executed 'Functions.rag-index-worker'"))
      .map((line) => Number(/Duration=(\d+)ms/.exec(line)?.[1]))
      .filter((duration) => !Number.isNaN(duration));
    expect(durations.length).toBeGreaterThan(0);
    expect(Math.max(...durations)).toBeLessThan(retryAfterSeconds * 1000);
  });
});

describe('tenants', { timeout: 120_000 }, () => {
  it("never mix: a tenant whose ids are the same as another's has an index of its own", async () => {
    await finished(main, (await start(main)).jobId);
    const { jobId } = await start(main, {}, NEIGHBOUR);
    expect((await finished(main, jobId, NEIGHBOUR)).counts).toMatchObject({ sources: 2, chunks: 2, written: 2 });
    const neighbourChunks = await chunksOf(NEIGHBOUR);
    expect(neighbourChunks.every((chunk) => chunk.tenantId === NEIGHBOUR)).toBe(true);
    const ownChunks = await chunksOf(TENANT);
    expect(ownChunks.every((chunk) => chunk.tenantId === TENANT)).toBe(true);
    // Both tenants' first project has the same id, and so the same chunk id.
    expect(ownChunks.map((chunk) => chunk.id)).toContain(`${neighbourProject}-c0`);

    await main.call('DELETE', `/projects/${neighbourProject}`, { token: tokens[NEIGHBOUR] });
    const after = await finished(main, (await start(main, {}, NEIGHBOUR)).jobId, NEIGHBOUR);
    expect(after.counts).toMatchObject({ sources: 0, chunks: 0, deleted: 2 });
    expect(await chunksOf(NEIGHBOUR)).toEqual([]);
    expect(await chunksOf(TENANT)).toHaveLength(ownChunks.length);
  });
});
