import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OperationInput } from '@azure/cosmos';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCosmosEmulator, type CosmosEmulator } from '../../local/cosmos/emulator.js';
import { startIdentityProvider, type IdentityProvider } from '../../local/identity/provider.js';
import { startHostProcess } from '../../local/stack.js';
import { writeInBatches } from '../../shared/data/batches.js';
import { taskDocument } from '../../shared/data/tasks-repository.js';
import { CLIENT_ID, HOME_TENANT, stack } from '../support/stack.js';

// A stack of this test's own, so that every request its database and identity provider serve is this test's.
describe('round trips per operation', () => {
  let folder: string;
  let cosmos: CosmosEmulator;
  let provider: IdentityProvider;
  let stopHost: () => Promise<void>;
  let baseUrl: string;
  let bearer: string;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'round-trips-'));
    cosmos = await startCosmosEmulator({ port: 0, host: '127.0.0.1', database: 'lms', tls: stack.tls });
    provider = await startIdentityProvider({ tenants: [HOME_TENANT], clientId: CLIENT_ID, tls: stack.tls, dataDir: folder });
    const host = await startHostProcess({
      port: 0,
      environment: {
        AUTH_TENANT_ID: HOME_TENANT,
        AUTH_CLIENT_ID: CLIENT_ID,
        AUTH_AUTHORITY_HOST: provider.authorityHost,
        COSMOS_CONNECTION: cosmos.connectionString,
        COSMOS_DATABASE: 'lms',
        // Round trips of the requests alone: the change feed relay's reads are background work of their own.
        'AzureWebJobs.changes-relay.Disabled': 'true',
        CURSOR_SIGNING_KEY: stack.cursorSigningKey,
      },
      extraCaCerts: stack.caCertPath,
    });
    stopHost = host.stop;
    baseUrl = `http://127.0.0.1:${host.port}/api`;
    bearer = `Bearer ${await provider.issueToken({ tenantId: HOME_TENANT, kind: 'user', roles: ['LMS.Admin'] })}`;
  });

  afterAll(async () => {
    await stopHost?.();
    await cosmos?.close();
    await provider?.close();
    await rm(folder, { recursive: true, force: true });
  });

  async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: bearer, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }

  /** The database requests one call makes, once caches are warm (query-plan lookups, which the SDK sends alongside each query, are counted apart). */
  async function cosmosRequests(run: () => Promise<{ status: number }>, expectedStatus: number): Promise<number> {
    const before = cosmos.counts.requests;
    expect((await run()).status).toBe(expectedStatus);
    return cosmos.counts.requests - before;
  }

  /** Like cosmosRequests, with the id reservations (patches, made by the create that finds its block used up) counted apart. */
  async function requestsAndReservations(run: () => Promise<{ status: number }>, expectedStatus: number): Promise<{ requests: number; patches: number }> {
    const patchesBefore = cosmos.counts.patches;
    const requests = await cosmosRequests(run, expectedStatus);
    const patches = cosmos.counts.patches - patchesBefore;
    return { requests: requests - patches, patches };
  }

  it('costs 1 to read by id, 1 for a list page, 1 to create (at most 3 with an Idempotency-Key), 2 to update', async () => {
    // Warm-up: the SDK reads the account and container once, the caller is recorded once, keys are fetched once.
    const first = await call('POST', '/projects', { name: 'Warm-up' });
    await call('GET', `/projects/${first.body.id}`);
    await call('GET', '/projects?limit=5');
    await call('PUT', `/projects/${first.body.id}`, { description: 'warm' });

    expect(await cosmosRequests(() => call('GET', `/projects/${first.body.id}`), 200)).toBe(1);
    const plansBefore = cosmos.counts.queryPlans;
    expect(await cosmosRequests(() => call('GET', '/projects?limit=5'), 200)).toBe(1);
    expect(cosmos.counts.queryPlans - plansBefore).toBeLessThanOrEqual(1);
    // Ids are reserved in blocks of 20, each by the create that finds the last one used up: counted apart, as patches.
    const creates = [];
    for (let index = 0; index < 25; index++) creates.push(await requestsAndReservations(() => call('POST', '/projects', { name: `Create ${index}` }), 201));
    expect(creates.map(({ requests }) => requests)).toEqual(creates.map(() => 1));
    expect(creates.reduce((sum, { patches }) => sum + patches, 0)).toBeLessThanOrEqual(2);
    expect(await cosmosRequests(() => call('POST', '/projects', { name: 'Keyed' }, { 'Idempotency-Key': 'round-trips-1' }), 201)).toBeLessThanOrEqual(3);
    expect(await cosmosRequests(() => call('PUT', `/projects/${first.body.id}`, { name: 'Renamed' }), 200)).toBe(2);
  });

  it('costs 2 to create a task (3 with an Idempotency-Key), with ids reserved 20 at a time', async () => {
    const project = await call('POST', '/projects', { name: 'Tasks' });
    await call('POST', '/tasks', { projectId: project.body.id, title: 'Warm-up' });
    /** The requests of one create: the project read and the batch writing the task, and apart from them the id reservations. */
    const taskCreate = (headers: Record<string, string> = {}) =>
      requestsAndReservations(() => call('POST', '/tasks', { projectId: project.body.id, title: 'Counted' }, headers), 201);
    const creates = [];
    for (let index = 0; index < 40; index++) creates.push(await taskCreate());
    expect(creates.map(({ requests }) => requests)).toEqual(creates.map(() => 2));
    // One reservation of 20 ids per 20 creates.
    const reservations = creates.reduce((sum, { patches }) => sum + patches, 0);
    expect(reservations).toBeGreaterThanOrEqual(1);
    expect(reservations).toBeLessThanOrEqual(2);
    expect((await taskCreate({ 'Idempotency-Key': 'round-trips-task-1' })).requests).toBe(3);
  });

  it('deletes a project with 500 tasks in batches, not 500 requests', async () => {
    const project = await call('POST', '/projects', { name: 'Five hundred tasks' });
    const now = new Date().toISOString();
    const tasks = Array.from({ length: 500 }, (_, index): OperationInput => ({
      operationType: 'Create',
      partitionKey: HOME_TENANT,
      resourceBody: taskDocument(HOME_TENANT, 900_000 + index, { projectId: project.body.id, title: `Task ${index}` }, 'seed', now),
    }));
    await writeInBatches(cosmos.client.database('lms').container('tenant-data'), HOME_TENANT, tasks);
    // Read, mark as deleting, list the tasks, 6 batches of 99 deletes and their count, read the count,
    // delete the project, list again: 12.
    expect(await cosmosRequests(() => call('DELETE', `/projects/${project.body.id}`), 204)).toBe(12);
    expect((await call('GET', `/tasks?projectId=${project.body.id}`)).body).toEqual([]);
  });

  it('validates tokens with no network call once the keys are known', async () => {
    await call('GET', '/projects?limit=1');
    const before = { ...provider.counts };
    for (let index = 0; index < 20; index++) await call('GET', '/projects?limit=1');
    expect(provider.counts).toEqual(before);
  });
});
