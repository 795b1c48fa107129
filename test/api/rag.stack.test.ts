import { CosmosClient } from '@azure/cosmos';
import { QueueClient } from '@azure/storage-queue';
import { afterAll, describe, expect, it } from 'vitest';
import { entityTag } from '../../shared/http/etag.js';
import { startEmbeddingsStandIn, type EmbeddingsStandIn } from '../support/embeddings-stand-in.js';
import { startOwnHost, stopOwnHosts } from '../support/own-hosts.js';
import { api, apiAt, HOME_TENANT, ownDatabase, stack, stackAppSettings, token, uniqueEmail } from '../support/stack.js';
import { switchableQueue } from '../support/switchable-queue.js';

const manager = () => token({ roles: ['LMS.Manager'] });
const cosmos = new CosmosClient({ endpoint: stack.cosmosEndpoint, key: stack.cosmosKey });
/** The RAG index of the shared database, or of a host's own. */
const chunksOf = (database = 'lms') => cosmos.database(database).container('rag-index');
const sentence = (index: number) => `Lesson ${index} walks through one more part of the material, slowly and with examples.`;

async function newProject(description = 'A short course.', baseUrl = stack.apiBaseUrl) {
  const response = await apiAt(baseUrl)('POST', '/projects', {
    token: await token({ roles: ['LMS.Admin'] }),
    body: { name: 'Indexed course', description, owner: uniqueEmail() },
  });
  expect(response.status).toBe(201);
  return response.body.id as string;
}

async function newTask(projectId: string, title: string, baseUrl = stack.apiBaseUrl) {
  const response = await apiAt(baseUrl)('POST', '/tasks', { token: await manager(), body: { projectId, title, description: 'Prepare it.' } });
  expect(response.status).toBe(201);
  return response.body.id as string;
}

type Job = {
  jobId: string;
  status: string;
  counts: { sources: number; chunks: number; written: number; unchanged: number; deleted: number } | null;
  error: string | null;
  completedAt: string | null;
};

/** Polls the job until it ends; the worker picks messages up within host.json's polling interval. */
async function finished(jobId: string, baseUrl = stack.apiBaseUrl): Promise<Job> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const response = await fetch(`${baseUrl}/rag/jobs/${jobId}`, { headers: { authorization: `Bearer ${await manager()}` } });
    const job = (await response.json()) as Job;
    if (['Succeeded', 'Failed', 'Cancelled'].includes(job.status)) return job;
    if (Date.now() > deadline) throw new Error(`Job ${jobId} still ${job.status}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function rebuild(body: Record<string, unknown>, baseUrl = stack.apiBaseUrl): Promise<Job> {
  const response = await fetch(`${baseUrl}/rag/index`, {
    method: 'POST',
    headers: { authorization: `Bearer ${await manager()}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const started = (await response.json()) as Job & { status: string };
  expect(response.status, JSON.stringify(started)).toBe(202);
  return finished(started.jobId, baseUrl);
}

async function chunkIds(projectIds: string[], database?: string): Promise<string[]> {
  return [...(await chunkVersions(projectIds, database)).keys()].sort();
}

/** Each chunk's ETag, by chunk id: a chunk rewritten gets a new one. */
async function chunkVersions(projectIds: string[], database?: string): Promise<Map<string, string>> {
  const { resources } = await chunksOf(database)
    .items.query<{ id: string; _etag: string }>(
      {
        query: 'SELECT c.id, c._etag FROM c WHERE c.tenantId = @tenantId AND ARRAY_CONTAINS(@projectIds, c.projectId)',
        parameters: [
          { name: '@tenantId', value: HOME_TENANT },
          { name: '@projectIds', value: projectIds },
        ],
      },
      { partitionKey: [HOME_TENANT] },
    )
    .fetchAll();
  return new Map(resources.map((chunk) => [chunk.id, chunk._etag]));
}

type Counts = NonNullable<Job['counts']>;

/**
 * Expects the job's counts: `sources` and `chunks` what the tenant's whole index holds after it (other
 * files' projects and tasks too, whatever the job's scope), read here as its chunks and the distinct
 * sources they are of; the others, `did`, what the job did in its scope. Other files start jobs of this tenant as
 * well, which change the index once this one has ended: the totals are compared while this job is
 * still the tenant's newest, and otherwise must hold at least the job's own scope.
 */
async function expectCounts(job: Job, scope: { sources: number; chunks: number }, did: Partial<Counts> = {}): Promise<void> {
  expect(job.status).toBe('Succeeded');
  expect(job.counts).toMatchObject(did);
  const { resources: sourceIds } = await chunksOf()
    .items.query<string>(
      { query: 'SELECT VALUE c.sourceId FROM c WHERE c.tenantId = @tenantId', parameters: [{ name: '@tenantId', value: HOME_TENANT }] },
      { partitionKey: [HOME_TENANT] },
    )
    .fetchAll();
  const newest = await api('GET', '/rag/jobs?limit=1', { token: await manager() });
  if ((newest.body as Job[])[0]?.jobId === job.jobId) {
    expect({ sources: job.counts!.sources, chunks: job.counts!.chunks }).toEqual({ sources: new Set(sourceIds).size, chunks: sourceIds.length });
  }
  expect(job.counts!.sources).toBeGreaterThanOrEqual(scope.sources);
  expect(job.counts!.chunks).toBeGreaterThanOrEqual(scope.chunks);
}

describe('POST /api/rag/index', () => {
  it('answers 202 with Location and a Queued job, which then succeeds', async () => {
    const projectId = await newProject();
    const response = await api('POST', '/rag/index', { token: await manager(), body: { projectIds: [projectId] } });
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({
      jobId: expect.any(String),
      status: 'Queued',
      mode: 'incremental',
      projectIds: [projectId],
      requestedAt: expect.any(String),
      requestedBy: expect.any(String),
      counts: null,
      error: null,
    });
    expect(response.headers.get('location')).toBe(`/api/rag/jobs/${response.body.jobId}`);
    const job = await finished(response.body.jobId);
    expect(job).toMatchObject({ status: 'Succeeded', error: null });
    await expectCounts(job, { sources: 1, chunks: 1 }, { written: 1, unchanged: 0, deleted: 0 });
  });

  it("answers a start and a cancel with the job's ETag, the one a read of the same job gives", async () => {
    const projectId = await newProject();
    const started = await api('POST', '/rag/index', { token: await manager(), body: { projectIds: [projectId] } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.headers.get('etag')).toBe(entityTag(started.body));
    const cancelled = await api('POST', `/rag/jobs/${started.body.jobId}/cancel`, { token: await manager() });
    expect([202, 409]).toContain(cancelled.status);
    if (cancelled.status === 202) expect(cancelled.headers.get('etag')).toBe(entityTag(cancelled.body));
    // Read right after: the same job has the same tag (a job that moved on since has another).
    const read = await api('GET', `/rag/jobs/${started.body.jobId}`, { token: await manager() });
    for (const answered of [started, cancelled].filter((answer) => answer.status === 202)) {
      if (JSON.stringify(read.body) === JSON.stringify(answered.body)) expect(read.headers.get('etag')).toBe(answered.headers.get('etag'));
      else expect(read.headers.get('etag')).not.toBe(answered.headers.get('etag'));
    }
    await finished(started.body.jobId);
  });

  it('takes a POST without a body as every default, and says in Retry-After when to look at the job', async () => {
    // A rebuild of the whole tenant, which another file's job may hold for a while: its 409 is waited out.
    const deadline = Date.now() + 60_000;
    let response = await api('POST', '/rag/index', { token: await manager() });
    while (response.status === 409 && Date.now() < deadline) {
      await finished(response.body.activeJobId);
      response = await api('POST', '/rag/index', { token: await manager() });
    }
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    expect(response.headers.get('retry-after')).toBe('2');
    expect(response.body).toMatchObject({ status: 'Queued', mode: 'incremental', projectIds: null });
    // Ended before the next test starts a job of this tenant; the whole tenant's job counts the whole index too.
    const job = await finished(response.body.jobId);
    await expectCounts(job, { sources: 0, chunks: 0 });
  });

  it('reflects created, changed and deleted projects and tasks, writing only what changed', async () => {
    const short = await newProject();
    const long = await newProject(Array.from({ length: 60 }, (_, index) => sentence(index)).join(' '));
    const tasks = [await newTask(short, 'Record the intro'), await newTask(short, 'Write the quiz')];
    const scope = { projectIds: [short, long] };

    const first = await rebuild(scope);
    const longChunks = (await chunkIds([long])).length;
    expect(longChunks).toBeGreaterThan(1);
    await expectCounts(first, { sources: 4, chunks: 3 + longChunks }, { written: 3 + longChunks, unchanged: 0, deleted: 0 });
    expect(await chunkIds([short, long])).toEqual(
      [`${short}-c0`, ...Array.from({ length: longChunks }, (_, index) => `${long}-c${index}`), `${tasks[0]}-c0`, `${tasks[1]}-c0`].sort(),
    );

    const { resource: chunk } = await chunksOf().item(`${tasks[0]}-c0`, [HOME_TENANT, short]).read();
    expect(chunk).toMatchObject({
      sourceType: 'task',
      sourceId: tasks[0],
      projectId: short,
      title: 'Record the intro',
      chunkIndex: 0,
      contentHash: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(chunk.content).toContain('Record the intro');

    const versions = await chunkVersions([short, long]);
    await expectCounts(await rebuild(scope), { sources: 4, chunks: 3 + longChunks }, { written: 0, unchanged: 3 + longChunks, deleted: 0 });
    // Unchanged chunks are not rewritten, not even with the same content.
    expect(await chunkVersions([short, long])).toEqual(versions);

    // Renaming a project rewrites its own chunk only: its tasks' chunks do not carry its name.
    await api('PUT', `/projects/${short}`, { token: await token({ roles: ['LMS.Admin'] }), body: { name: 'Renamed course' } });
    expect((await rebuild(scope)).counts).toMatchObject({ written: 1, deleted: 0 });

    await api('DELETE', `/tasks/${tasks[1]}`, { token: await manager() });
    await expectCounts(await rebuild(scope), { sources: 3, chunks: 2 + longChunks }, { written: 0, unchanged: 2 + longChunks, deleted: 1 });

    await api('DELETE', `/projects/${long}`, { token: await token({ roles: ['LMS.Admin'] }) });
    await expectCounts(await rebuild(scope), { sources: 2, chunks: 2 }, { written: 0, unchanged: 2, deleted: longChunks });
    expect(await chunkIds([short, long])).toEqual([`${short}-c0`, `${tasks[0]}-c0`].sort());
  });

  it('rewrites every chunk in full mode', async () => {
    const projectId = await newProject();
    await newTask(projectId, 'One');
    await rebuild({ projectIds: [projectId] });
    await expectCounts(await rebuild({ mode: 'full', projectIds: [projectId] }), { sources: 2, chunks: 2 }, { written: 2, unchanged: 0, deleted: 0 });
  });

  it('allows one active job per tenant: a second request is a 409 naming the first', async () => {
    const projectId = await newProject();
    const [first, second] = await Promise.all([1, 2].map(async () => api('POST', '/rag/index', { token: await manager(), body: { projectIds: [projectId] } })));
    const statuses = [first!.status, second!.status].sort();
    expect(statuses).toEqual([202, 409]);
    const accepted = first!.status === 202 ? first! : second!;
    const refused = first!.status === 409 ? first! : second!;
    expect(refused.body).toMatchObject({ error: 'Conflict', activeJobId: accepted.body.jobId });
    await finished(accepted.body.jobId);
    const next = await api('POST', '/rag/index', { token: await manager(), body: { projectIds: [projectId] } });
    expect(next.status).toBe(202);
    await finished(next.body.jobId);
  });

  it('honours an Idempotency-Key: a retry answers the first 202 (same job, same Location) and starts nothing; another body is a 422', async () => {
    const projectId = await newProject();
    const body = { projectIds: [projectId] };
    const key = `rag-${projectId}-${Date.now()}`;
    const start = async (headers: Record<string, string>, sent: object = body) => api('POST', '/rag/index', { token: await manager(), body: sent, headers });
    /** This test's jobs (of its own project), newest first. */
    const jobsOfProject = async () =>
      ((await api('GET', '/rag/jobs?limit=200', { token: await manager() })).body as (Job & { projectIds: string[] | null })[])
        .filter((job) => job.projectIds?.[0] === projectId)
        .map((job) => job.jobId);

    // Refused while another job runs: nothing is recorded under the key.
    const other = await start({});
    expect(other.status).toBe(202);
    const refused = await start({ 'Idempotency-Key': key });
    expect(refused.status).toBe(409);
    await finished(other.body.jobId);

    const first = await start({ 'Idempotency-Key': key });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const retried = await start({ 'Idempotency-Key': key });
    expect(retried.status).toBe(202);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.headers.get('location')).toBe(first.headers.get('location'));
    expect(retried.body).toEqual(first.body);
    // After the job ended, the retry still answers it as first answered, and starts nothing.
    expect((await finished(first.body.jobId)).status).toBe('Succeeded');
    const late = await start({ 'Idempotency-Key': key });
    expect(late.status).toBe(202);
    expect(late.body).toEqual(first.body);
    expect(late.body.status).toBe('Queued');
    expect(late.headers.get('location')).toBe(`/api/rag/jobs/${first.body.jobId}`);
    expect(late.headers.get('idempotent-replayed')).toBe('true');
    expect(await jobsOfProject()).toEqual([first.body.jobId, other.body.jobId]);

    const reused = await start({ 'Idempotency-Key': key }, { mode: 'full', projectIds: [projectId] });
    expect(reused.status).toBe(422);
    expect(reused.body).toMatchObject({ error: 'Unprocessable Content' });
    expect(await jobsOfProject()).toEqual([first.body.jobId, other.body.jobId]);
  });

  it('validates the body and the role', async () => {
    for (const body of [{ mode: 'partial' }, { projectIds: [] }, { projectIds: ['nope'] }, { extra: 1 }]) {
      expect((await api('POST', '/rag/index', { token: await manager(), body })).status).toBe(400);
    }
    expect((await api('POST', '/rag/index', { token: await token({ roles: ['LMS.Member'] }), body: {} })).status).toBe(403);
    expect((await api('GET', '/rag/jobs', { token: await token({ roles: ['LMS.Reader'] }) })).status).toBe(403);
  });

  it('ignores a message for a job that already finished', async () => {
    const projectId = await newProject();
    const job = await rebuild({ projectIds: [projectId] });
    const queue = new QueueClient(stack.storageConnectionString, 'rag-index-jobs');
    await queue.sendMessage(Buffer.from(JSON.stringify({ jobId: job.jobId, tenantId: HOME_TENANT })).toString('base64'));
    // The host deletes a message only once its handler has returned.
    await expect.poll(async () => (await queue.getProperties()).approximateMessagesCount, { timeout: 15_000, interval: 200 }).toBe(0);
    expect(await finished(job.jobId)).toEqual(job);
  });
});

describe('GET /api/rag/jobs', () => {
  it('lists jobs newest first, and answers 404 for an unknown job', async () => {
    const projectId = await newProject();
    const older = await rebuild({ projectIds: [projectId] });
    const newer = await rebuild({ projectIds: [projectId] });
    const list = await api('GET', '/rag/jobs?limit=2', { token: await manager() });
    expect(list.status).toBe(200);
    expect(list.body.map((job: Job) => job.jobId)).toEqual([newer.jobId, older.jobId]);
    expect(list.headers.get('link')).toContain('rel="next"');
    expect((await api('GET', '/rag/jobs/00000000-0000-4000-8000-000000000000', { token: await manager() })).status).toBe(404);
    expect((await api('GET', '/rag/jobs/not-a-job', { token: await manager() })).status).toBe(404);
  });

  it("are read as the role table says, their events too: LMS.Manager lists and reads a job's event, LMS.Reader neither (404)", async () => {
    const job = await rebuild({ projectIds: [await newProject()] });
    expect(job.status).toBe('Succeeded');
    const reader = await token({ roles: ['LMS.Reader'] });
    expect((await api('GET', `/rag/jobs/${job.jobId}`, { token: reader })).status).toBe(403);
    // The event is written with the job's last change, so it is there once the job has ended.
    const listed = await api('GET', '/events?type=rag.job.succeeded&limit=200', { token: await manager() });
    const event = listed.body.find((item: { data: { jobId: string } }) => item.data.jobId === job.jobId);
    expect(event, JSON.stringify(listed.body)).toMatchObject({ type: 'rag.job.succeeded', data: { status: 'Succeeded', counts: job.counts } });
    expect((await api('GET', `/events/${event.id}`, { token: await manager() })).status).toBe(200);

    expect((await api('GET', '/events?type=rag.job.succeeded&limit=200', { token: reader })).body).toEqual([]);
    const everything = await api('GET', '/events?limit=200', { token: reader });
    expect(everything.status).toBe(200);
    expect(everything.body.filter((item: { type: string }) => item.type.startsWith('rag.'))).toEqual([]);
    const read = await api('GET', `/events/${event.id}`, { token: reader });
    expect(read.status).toBe(404);
    expect(read.body).toMatchObject({ error: 'Not Found', status: 404 });
  });
});

describe('the RAG worker under failure', () => {
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    await stopOwnHosts();
    for (const stop of stops) await stop();
  });

  /** An app of its own (its database, its queues), so that this test's relay and worker alone handle its jobs. */
  async function hostWith(environment: Record<string, string>): Promise<{ baseUrl: string; database: string; lines: string[] }> {
    const own = { ...stackAppSettings, ...(await ownDatabase()) };
    const host = await startOwnHost({
      ...own,
      AzureWebJobsStorage: stack.storageConnectionString,
      AzureFunctionsJobHost__extensions__queues__visibilityTimeout: '00:00:01',
      AzureFunctionsJobHost__extensions__queues__maxPollingInterval: '00:00:00.2',
      ...environment,
    });
    return { baseUrl: host.url, database: own.COSMOS_DATABASE, lines: host.lines };
  }

  async function embeddings(): Promise<EmbeddingsStandIn> {
    const standIn = await startEmbeddingsStandIn({ apiKey: 'test-key' });
    stops.push(() => standIn.close());
    return standIn;
  }

  it('embeds changed chunks only, in batches', async () => {
    const standIn = await embeddings();
    const { baseUrl, database } = await hostWith({
      EMBEDDINGS_ENDPOINT: standIn.url,
      EMBEDDINGS_API_KEY: 'test-key',
      EMBEDDINGS_MODEL: 'text-embedding-3-small',
    });
    const projectId = await newProject(undefined, baseUrl);
    const taskId = await newTask(projectId, 'Embed me', baseUrl);
    await rebuild({ projectIds: [projectId] }, baseUrl);
    expect(standIn.counts.inputs).toBe(2);
    const { resource } = await chunksOf(database).item(`${taskId}-c0`, [HOME_TENANT, projectId]).read();
    expect(resource.embedding).toHaveLength(32);
    await rebuild({ projectIds: [projectId] }, baseUrl);
    await rebuild({ mode: 'full', projectIds: [projectId] }, baseUrl);
    expect(standIn.counts.inputs).toBe(2);
    await apiAt(baseUrl)('PUT', `/tasks/${taskId}`, { token: await manager(), body: { title: 'Embed me again' } });
    await rebuild({ projectIds: [projectId] }, baseUrl);
    expect(standIn.counts.inputs).toBe(3);
  });

  it('retries a worker that failed mid-job, and the retry finishes with a correct index', async () => {
    const standIn = await embeddings();
    const { baseUrl, database } = await hostWith({ EMBEDDINGS_ENDPOINT: standIn.url, EMBEDDINGS_API_KEY: 'test-key', EMBEDDINGS_MODEL: 'm' });
    const projectId = await newProject(undefined, baseUrl);
    await newTask(projectId, 'Survive a failure', baseUrl);
    // Enough failures to exhaust the first attempt's retries; the queue's second delivery succeeds.
    standIn.failNext(6, 503, 0);
    const job = await rebuild({ projectIds: [projectId] }, baseUrl);
    expect(job).toMatchObject({ status: 'Succeeded', counts: { sources: 2, chunks: 2, written: 2, deleted: 0 } });
    expect(standIn.counts.requests).toBeGreaterThanOrEqual(7);
    expect(await chunkIds([projectId], database)).toHaveLength(2);
  });

  it('fails the job with its last error when the message is poisoned', async () => {
    const standIn = await embeddings();
    const queue = `rag-test-poison-${Math.random().toString(36).slice(2, 8)}`;
    const { baseUrl } = await hostWith({
      RAG_QUEUE_NAME: queue,
      EMBEDDINGS_ENDPOINT: standIn.url,
      EMBEDDINGS_API_KEY: 'test-key',
      EMBEDDINGS_MODEL: 'm',
      AzureFunctionsJobHost__extensions__queues__maxDequeueCount: '2',
    });
    const projectId = await newProject(undefined, baseUrl);
    standIn.failNext(1_000, 503, 0);
    const job = await rebuild({ projectIds: [projectId] }, baseUrl);
    expect(job.status).toBe('Failed');
    expect(job.error).toMatch(/^Batch 0 \(1 project\) failed after every retry\. Last error: EmbeddingsUnavailableError/);
    // The message went to the poison queue, whose handler failed the job and consumed it (the host deletes
    // a message once its handler has returned, so the job can read Failed a moment before).
    for (const name of [queue, `${queue}-poison`]) {
      const client = new QueueClient(stack.storageConnectionString, name);
      await expect.poll(async () => (await client.getProperties()).approximateMessagesCount, { timeout: 10_000, interval: 100 }).toBe(0);
    }
  });

  it('takes a job while the queue cannot be reached, and runs it once the queue is back', { timeout: 60_000 }, async () => {
    const queue = await switchableQueue();
    stops.push(() => queue.close());
    const { baseUrl, lines } = await hostWith({ AzureWebJobsStorage: queue.connectionString });
    const projectId = await newProject(undefined, baseUrl);
    queue.down = true;
    const response = await fetch(`${baseUrl}/rag/index`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await manager()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ projectIds: [projectId] }),
    });
    const job = (await response.json()) as Job;
    expect(response.status).toBe(202);
    expect(job.status).toBe('Queued');
    // The relay cannot put it on the queue: its invocation fails, and the retry policy runs it again; the job stays Queued.
    await expect
      .poll(() => lines.filter((line) => line.includes("Executed 'Functions.changes-relay' (Failed")).length, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(2);
    expect(((await apiAt(baseUrl)('GET', `/rag/jobs/${job.jobId}`, { token: await manager() })).body as Job).status).toBe('Queued');
    queue.down = false;
    expect(await finished(job.jobId, baseUrl)).toMatchObject({ status: 'Succeeded', counts: { sources: 1 } });
  });
});
