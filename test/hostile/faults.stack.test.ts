/**
 * A failing world: the database gone and back, the database throttling, the identity provider
 * unreachable at start, a RAG worker killed mid-job. Each runs on a host of its own with the part
 * under test of its own too, so that breaking it disturbs no other test. (The queue being down is
 * covered by test/api/rag.stack.test.ts: "gives 503 and leaves no stuck job when the queue cannot be
 * reached".)
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CosmosClient } from '@azure/cosmos';
import { QueueClient } from '@azure/storage-queue';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import { startCosmosEmulator, type CosmosEmulator } from '../../local/cosmos/emulator.js';
import { startEmbeddingsStandIn } from '../support/embeddings-stand-in.js';
import { startIdentityProvider, type IdentityProvider } from '../../local/identity/provider.js';
import { startCosmosProxy } from '../support/cosmos-proxy.js';
import { hostileTest } from '../support/hostile-cases.js';
import { forgetOwnHost, freePort, isAlive, sharedStackSettings, startOwnHost, stopOwnHosts, type OwnHost } from '../support/own-hosts.js';
import { apiAt, expectClientError, expectErrorShape, type HostileResponse } from '../support/raw-http.js';
import { logsAreClean, rememberSecret } from '../support/secrets-and-logs.js';
import { startSmallServer } from '../support/small-server.js';
import { CLIENT_ID, HOME_TENANT, ownDatabase, stack, token } from '../support/stack.js';

const cleanups: (() => Promise<unknown>)[] = [];
const hostsSeen: OwnHost[] = [];
afterAll(async () => {
  await stopOwnHosts();
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

async function ownHost(environment: Record<string, string>): Promise<OwnHost> {
  const host = await startOwnHost(environment);
  hostsSeen.push(host);
  return host;
}

const admin = () => token({ roles: ['LMS.Admin'] });

/** A 503 in the contract's shape with a Retry-After in seconds, answered within `withinMs`. */
async function expectUnavailable(request: () => Promise<HostileResponse>, withinMs: number, context: string): Promise<void> {
  const started = Date.now();
  const response = await request();
  const elapsed = Date.now() - started;
  expect(response.status, `${context}: ${response.text.slice(0, 300)}`).toBe(503);
  expectErrorShape(response, context);
  expect(response.headers['retry-after'], `${context}: Retry-After`).toMatch(/^\d+$/);
  expect(elapsed, `${context}: answered after ${elapsed} ms`).toBeLessThan(withinMs);
}

/** Polls until the request answers `status`, or fails after `timeoutMs`. */
async function eventually(request: () => Promise<HostileResponse>, status: number, timeoutMs: number): Promise<HostileResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await request();
    if (response.status === status) return response;
    if (Date.now() > deadline) throw new Error(`still ${response.status} after ${timeoutMs} ms: ${response.text.slice(0, 300)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('the database unreachable, then back', () => {
  hostileTest(
    'every kind of request is a 503 with Retry-After while it is down, and the API recovers by itself when it returns',
    async (cases) => {
      const port = await freePort();
      const start = () => startCosmosEmulator({ port, host: '127.0.0.1', database: 'lms', tls: stack.tls });
      let emulator: CosmosEmulator = await start();
      cleanups.push(() => emulator.close());
      const host = await ownHost({ ...sharedStackSettings(), COSMOS_CONNECTION: emulator.connectionString });
      const call = apiAt(host.url);
      const bearer = await admin();
      const created = await call('POST', '/projects', { token: bearer, body: { name: 'Before the outage', owner: 'outage@contoso.test' } });
      expect(created.status, created.text).toBe(201);
      const id = created.body.id;

      await emulator.close();
      const requests: [string, string, unknown?][] = [
        ['GET', '/projects'],
        ['POST', '/projects', { name: 'During the outage', owner: 'outage@contoso.test' }],
        ['GET', `/projects/${id}`],
        ['PUT', `/projects/${id}`, { name: 'Changed during the outage' }],
        ['DELETE', `/projects/${id}`],
        ['GET', '/tasks'],
        ['POST', '/tasks', { projectId: id, title: 'During the outage' }],
        ['GET', '/users'],
        ['GET', '/users/me'],
        ['GET', '/rag/jobs'],
        ['POST', '/rag/index', {}],
      ];
      for (const [method, path, body] of requests) {
        await expectUnavailable(() => call(method, path, { token: bearer, ...(body ? { body } : {}) }), 15_000, `${method} ${path} with the database down`);
        cases.add();
      }
      // A request that needs no database is still answered as usual.
      expectClientError(await call('GET', '/projects', { token: 'garbage' }), 401);
      cases.add();

      emulator = await start();
      const back = await eventually(() => call('GET', '/projects', { token: bearer }), 200, 20_000);
      expect(Array.isArray(back.body)).toBe(true);
      const after = await call('POST', '/projects', { token: bearer, body: { name: 'After the outage', owner: 'outage@contoso.test' } });
      expect(after.status, after.text).toBe(201);
    },
    120_000,
  );
});

describe('the database throttling (429)', () => {
  let cosmos: Awaited<ReturnType<typeof startCosmosProxy>>;
  let call: ReturnType<typeof apiAt>;
  let throttled = 0;
  /** Throttled attempts per operation (method and path). */
  let attempts = new Map<string, number>();
  const mostAttempts = () => Math.max(0, ...attempts.values());
  const owner = `throttled-${randomUUID().slice(0, 8)}@contoso.test`;
  const list = () => call('GET', `/projects?owner=${encodeURIComponent(owner)}`, { token: bearer });
  let bearer = '';

  /** Answers the next `limit` document requests with 429 and x-ms-retry-after-ms, as Cosmos DB does when throttling. */
  function throttle(limit: number, retryAfterMs: number): void {
    throttled = 0;
    attempts = new Map();
    cosmos.intercept = (request) => {
      if (!request.path.includes('/docs') || throttled >= limit) return undefined;
      throttled++;
      const operation = `${request.method} ${request.path} ${request.isQuery ? 'query' : ''}`;
      attempts.set(operation, (attempts.get(operation) ?? 0) + 1);
      return { status: 429, headers: { 'x-ms-retry-after-ms': String(retryAfterMs), 'x-ms-substatus': '3200' } };
    };
  }

  beforeAll(async () => {
    cosmos = await startCosmosProxy();
    cleanups.push(() => cosmos.close());
    call = apiAt((await ownHost({ ...sharedStackSettings(), COSMOS_CONNECTION: cosmos.connectionString })).url);
    bearer = await admin();
    expect((await call('GET', '/projects?limit=1', { token: bearer })).status).toBe(200);
  });

  afterEach(() => {
    cosmos.intercept = undefined;
  });

  hostileTest('a short burst of 429s is retried by the client and the request succeeds', async (cases) => {
    throttle(3, 50);
    const response = await list();
    cases.add();
    expect(response.status, response.text).toBe(200);
    expect(throttled, 'throttled answers retried').toBe(3);
  });

  // shared/data/cosmos.ts configures 5 retries and at most 5 s of waiting (retryOptions).
  hostileTest(
    'sustained 429s are a 503 with Retry-After within the configured bound (5 retries, 5 s of waiting), and nothing is stored',
    async (cases) => {
      throttle(Infinity, 100);
      const created = await call('POST', '/projects', { token: bearer, body: { name: 'Throttled', owner } });
      cases.add();
      expect(created.status, created.text).toBe(503);
      expect(created.headers['retry-after']).toMatch(/^\d+$/);
      expect(mostAttempts(), `attempts of one throttled operation (1 + at most 5 retries): ${JSON.stringify([...attempts])}`).toBeLessThanOrEqual(6);

      throttle(Infinity, 2_000);
      // The SDK retries while its waits add up to less than 5 s: 3 waits of 2 s, then the 503. The bound leaves
      // a loaded machine room; the attempt count below is the strict check.
      await expectUnavailable(list, 15_000, 'a read throttled for good, asked to wait 2 s each time');
      cases.add();
      expect(mostAttempts(), `attempts of one throttled operation: ${JSON.stringify([...attempts])}`).toBeLessThanOrEqual(6);

      cosmos.intercept = undefined;
      const recovered = await list();
      expect(recovered.status).toBe(200);
      expect(recovered.body, 'the throttled create stored nothing').toEqual([]);
    },
    60_000,
  );
});

describe('the identity provider unreachable at start, then back', () => {
  hostileTest(
    'a valid token is a 503 with Retry-After (not a 401 or a 500) until the provider answers, then a 200; cached keys outlive a later outage',
    async (cases) => {
      const dataDir = await mkdtemp(join(tmpdir(), 'hostile-idp-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const port = await freePort();
      const start = () => startIdentityProvider({ port, tenants: [HOME_TENANT], clientId: CLIENT_ID, tls: stack.tls, dataDir });
      let provider: IdentityProvider = await start();
      const valid = await provider.issueToken({ tenantId: HOME_TENANT, kind: 'user', roles: ['LMS.Admin'] });
      rememberSecret(String(provider.privateJwk.d));
      await provider.close();

      const host = await ownHost({ ...sharedStackSettings(), AUTH_ALLOWED_TENANTS: HOME_TENANT, AUTH_AUTHORITY_HOST: provider.authorityHost });
      const call = apiAt(host.url);
      for (const path of ['/projects', '/users/me', '/rag/jobs']) {
        await expectUnavailable(() => call('GET', path, { token: valid }), 12_000, `GET ${path} with the identity provider down`);
        cases.add();
      }
      // A token that is bad on its face needs no identity provider to be refused.
      expectClientError(await call('GET', '/projects', { token: 'x.y.z' }), 401);
      cases.add();

      provider = await start();
      cleanups.push(() => provider.close());
      await eventually(() => call('GET', '/projects?limit=1', { token: valid }), 200, 15_000);
      await provider.close();
      const cached = await call('GET', '/projects?limit=1', { token: valid });
      expect(cached.status, 'keys fetched before the second outage still validate tokens').toBe(200);
      cases.add();
    },
    90_000,
  );
});

// ------------------------------------------------------------------ a RAG worker killed mid-job

describe('a RAG worker killed mid-job', () => {
  hostileTest(
    'the job is retried by the next worker and ends Succeeded with a correct index',
    async (cases) => {
      // A tenant of its own, so that its RAG lock is free whatever the other tests do.
      const tenant = randomUUID();
      const provider = await startIdentityProvider({ port: 0, tenants: [tenant], clientId: CLIENT_ID, tls: stack.tls });
      cleanups.push(() => provider.close());
      rememberSecret(String(provider.privateJwk.d));
      const bearer = await provider.issueToken({ tenantId: tenant, kind: 'user', roles: ['LMS.Admin'] });
      const queueName = `hostile-kill-${randomUUID().slice(0, 8)}`;
      // Embeddings that never answer: the worker is stuck mid-job when it is killed.
      const hanging = await startSmallServer(() => undefined);
      cleanups.push(() => hanging.close());
      const embeddingsKey = rememberSecret(`hostile-embeddings-key-${randomUUID()}`);
      // An app of its own (its database, its relay), so that its job goes on its queue.
      const own = await ownDatabase();
      const settings = {
        ...sharedStackSettings(),
        ...own,
        AUTH_TENANT_ID: tenant,
        AUTH_ALLOWED_TENANTS: tenant,
        AUTH_AUTHORITY_HOST: provider.authorityHost,
        RAG_QUEUE_NAME: queueName,
        EMBEDDINGS_API_KEY: embeddingsKey,
        EMBEDDINGS_MODEL: 'text-embedding-3-small',
        AzureFunctionsJobHost__extensions__queues__maxPollingInterval: '00:00:00.2',
        AzureFunctionsJobHost__extensions__queues__visibilityTimeout: '00:00:01',
        // The messages a killed host held come back after two seconds, instead of Azure's ten minutes.
        LOCAL_QUEUE_MESSAGE_LEASE: '2',
      };
      const first = await ownHost({
        ...settings,
        EMBEDDINGS_ENDPOINT: `${hanging.url}/v1`,
      });
      const call = apiAt(first.url);
      const project = await call('POST', '/projects', { token: bearer, body: { name: 'Survives a crash', owner: 'crash@contoso.test' } });
      expect(project.status, project.text).toBe(201);
      for (const title of ['Record the intro', 'Write the quiz']) {
        expect((await call('POST', '/tasks', { token: bearer, body: { projectId: project.body.id, title } })).status).toBe(201);
      }
      const started = await call('POST', '/rag/index', { token: bearer, body: {} });
      expect(started.status, started.text).toBe(202);
      const jobId = started.body.jobId as string;

      // Killed while it waits for embeddings: the job is Running, its message invisible and unsettled.
      await expect.poll(() => hanging.hits.length, { timeout: 20_000, interval: 100 }).toBeGreaterThan(0);
      expect((await call('GET', `/rag/jobs/${jobId}`, { token: bearer })).body.status).toBe('Running');
      const pid = await first.pid();
      process.kill(pid, 'SIGKILL');
      forgetOwnHost(first);
      await expect.poll(() => isAlive(pid), { timeout: 10_000, interval: 50 }).toBe(false);
      cases.add();

      const queue = new QueueClient(stack.storageConnectionString, queueName);
      const embeddings = await startEmbeddingsStandIn({ apiKey: embeddingsKey });
      cleanups.push(() => embeddings.close());
      const second = await ownHost({ ...settings, EMBEDDINGS_ENDPOINT: embeddings.url });
      const job = (
        await eventually(
          () =>
            apiAt(second.url)('GET', `/rag/jobs/${jobId}`, { token: bearer }).then((response) => ({
              ...response,
              status: ['Succeeded', 'Failed'].includes(response.body.status) ? 299 : 0,
            })),
          299,
          30_000,
        )
      ).body;
      expect(job).toMatchObject({ status: 'Succeeded', error: null, counts: { sources: 3, chunks: 3, written: 3, unchanged: 0, deleted: 0 } });
      expect(embeddings.counts.inputs).toBe(3);

      const chunks = new CosmosClient({ endpoint: stack.cosmosEndpoint, key: stack.cosmosKey }).database(own.COSMOS_DATABASE!).container('rag-index');
      const { resources } = await chunks.items
        .query<{ id: string; embedding?: number[] }>(
          { query: 'SELECT * FROM c WHERE c.tenantId = @tenantId', parameters: [{ name: '@tenantId', value: tenant }] },
          { partitionKey: [tenant] },
        )
        .fetchAll();
      expect(resources).toHaveLength(3);
      for (const chunk of resources) expect(chunk.embedding).toHaveLength(32);
      await expect.poll(async () => (await queue.getProperties()).approximateMessagesCount, { timeout: 10_000 }).toBe(0);
      const poison = new QueueClient(stack.storageConnectionString, `${queueName}-poison`);
      expect((await poison.exists()) ? (await poison.getProperties()).approximateMessagesCount : 0).toBe(0);
    },
    90_000,
  );
});

logsAreClean("the fault tests' host logs", () => hostsSeen.flatMap((host) => host.lines));
