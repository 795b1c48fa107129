import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { join } from 'node:path';
import { ChangeFeedStartFrom, CosmosClient, StatusCodes, type Container } from '@azure/cosmos';
import { afterEach, describe, expect, it } from 'vitest';
import { EMULATOR_KEY, startCosmosEmulator, type CosmosEmulator } from '../../../local/cosmos/emulator.js';
import { DocumentStore } from '../../../local/cosmos/disk.js';
import { appRoot } from '../../../local/stack.js';
import { heldPort } from '../../support/commands.js';
import { waitFor } from '../../support/wait.js';
import { temporaryEmulators } from '../../support/temporary-emulators.js';

interface Document {
  id: string;
  tenantId: string;
  [field: string]: unknown;
}

describe('the embedded Cosmos DB', () => {
  const emulators = temporaryEmulators('cosmos-emulator-test', { closeAfterEach: true });
  const children: ChildProcess[] = [];

  afterEach(() => {
    for (const child of children.splice(0)) killGroup(child);
  });
  const killGroup = (child: ChildProcess) => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  };

  const tenantData = (emulator: CosmosEmulator) => emulator.client.database('lms').container('tenant-data');
  const read = async (container: Container, id: string, tenantId = 't1') => (await container.item(id, tenantId).read<Document>()).resource;
  /** How many documents the server holds in tenant-data, in memory: those past their time to live that no purge removed too. */
  const held = (emulator: CosmosEmulator) =>
    (emulator.account.database('lms').collection('tenant-data').documents as unknown as { _data: Map<string, unknown> })._data.size;
  /** The ids of tenant-data that the folder's database keeps, read by the store itself while no emulator runs. */
  async function idsOnDisk(dataDir: string): Promise<string[]> {
    const { store, kept } = await DocumentStore.open(dataDir, () => []);
    await store.close();
    return kept.flatMap(({ container, document }) => (container === 'tenant-data' ? [document.id] : [])).sort();
  }

  /**
   * The emulator in a process of its own (the build's), so that the test can kill it as a crash would;
   * with `traceFile`, under strace, which records the process's file and socket writes and syncs; with
   * `fileSizeLimit`, under `ulimit -f` (in the shell's blocks), so that a file it writes cannot grow past it, as on a full disk.
   */
  async function startInChild(dataDir: string, { traceFile, fileSizeLimit }: { traceFile?: string; fileSizeLimit?: number } = {}) {
    const module = join(appRoot(), 'dist', 'local', 'cosmos', 'emulator.js');
    const script = `
      const { startCosmosEmulator } = await import(${JSON.stringify(module)});
      const tls = JSON.parse(process.env.EMULATOR_TLS);
      const emulator = await startCosmosEmulator({ port: 0, host: '127.0.0.1', database: 'lms', tls, dataDir: process.env.EMULATOR_DATA_DIR });
      console.log(emulator.endpoint);`;
    const node = [process.execPath, '--input-type=module', '-e', script];
    // -f: the file writes and syncs run on LMDB's threads; -y: each descriptor with its file or socket. Each sync is
    // slowed down by 20 ms, as on a slow disk, so that an answer that does not wait for it goes out before it ends.
    const calls = 'trace=openat,write,writev,pwrite64,pwritev,fdatasync,fsync';
    const slowSyncs = 'inject=fdatasync,fsync:delay_enter=20000';
    const limited = fileSizeLimit ? ['sh', '-c', 'ulimit -f "$0" && exec "$@"', String(fileSizeLimit), ...node] : node;
    const command = traceFile ? ['strace', '-f', '-y', '-qq', '-e', calls, '-e', slowSyncs, '-o', traceFile, ...limited] : limited;
    const child = spawn(command[0]!, command.slice(1), {
      env: { ...process.env, EMULATOR_TLS: JSON.stringify(emulators.tls), EMULATOR_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'inherit'],
      // A group of its own, killed whole: strace killed alone would leave the emulator it traces running.
      detached: true,
    });
    children.push(child);
    const endpoint = await new Promise<string>((resolve, reject) => {
      child.stdout.setEncoding('utf8').once('data', (line: string) => resolve(line.trim()));
      child.once('exit', (code) => reject(new Error(`The emulator exited (code ${code}) before it listened`)));
    });
    const agent = new Agent({ ca: emulators.tls.cert, keepAlive: true });
    const client = new CosmosClient({ endpoint, key: EMULATOR_KEY, agent });
    return {
      container: client.database('lms').container('tenant-data'),
      async kill(): Promise<void> {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        killGroup(child);
        await exited;
        client.dispose();
        agent.destroy();
      },
    };
  }

  /**
   * Creates of `burst-<n>` and increments of the `counter` document, `atOnce` at a time, until the
   * child is killed after `killAfter` acknowledged writes. Returns what was acknowledged.
   */
  async function burstUntilKilled(child: Awaited<ReturnType<typeof startInChild>>, killAfter: number, atOnce = 8) {
    const created: string[] = [];
    let highestCount = 0;
    let acknowledged = 0;
    let killed: Promise<void> | undefined;
    let next = 0;
    await Promise.all(
      Array.from({ length: atOnce }, async () => {
        while (!killed) {
          const index = next++;
          try {
            if (index % 2 === 0) {
              await child.container.items.create({ id: `burst-${index}`, tenantId: 't1', index });
              created.push(`burst-${index}`);
            } else {
              const { resource } = await child.container.item('counter', 't1').patch<{ value: number }>([{ op: 'incr', path: '/value', value: 1 }]);
              highestCount = Math.max(highestCount, resource!.value);
            }
            if (++acknowledged === killAfter) killed = child.kill();
          } catch (error) {
            if (!killed) throw error;
          }
        }
      }),
    );
    await killed;
    return { created, highestCount };
  }

  /** What a burst cut short by a kill had acknowledged is all in the restarted store. */
  async function expectBurstKept(restarted: Container, { created, highestCount }: Awaited<ReturnType<typeof burstUntilKilled>>) {
    const missing = [];
    for (const id of created) if (!(await read(restarted, id))) missing.push(id);
    expect(missing, 'acknowledged creates lost').toEqual([]);
    // Increments that were under way at the kill may or may not have landed; every answered one did.
    expect((await read(restarted, 'counter'))!.value).toBeGreaterThanOrEqual(highestCount);
  }

  it('answers a write only once its commit is on disk', async () => {
    const dataDir = join(emulators.folder, 'synced');
    const traceFile = join(emulators.folder, 'synced.strace');
    const child = await startInChild(dataDir, { traceFile });
    // One at a time, so that each write has a commit of its own (LMDB commits the writes that overlap together).
    for (let index = 0; index < 20; index++) await child.container.items.create({ id: `synced-${index}`, tenantId: 't1' });
    await child.kill();
    // LMDB commits by writing the pages, syncing them, then writing the meta page through a descriptor opened with
    // O_DSYNC (opened after the new file's first meta pages are written). In the order the system calls were made, a
    // socket written to between a page write and the meta write that follows its sync is an answer given too early.
    const metaDescriptors = new Set<string>();
    let [uncommitted, synced, commits, earlyAnswers] = [false, false, 0, 0];
    for (const line of (await readFile(traceFile, 'utf8')).split('\n')) {
      const opened = /openat\(.*documents\.mdb", [^)]*O_DSYNC[^)]*\) = (\d+)/.exec(line);
      if (opened) metaDescriptors.add(opened[1]!);
      const call = /^\d+\s+(\w+)\((\d+)<([^>]*)>/.exec(line);
      if (!call) continue;
      const [, name, descriptor, target] = call;
      const database = target!.endsWith('documents.mdb');
      if (database && name!.includes('write') && metaDescriptors.has(descriptor!)) {
        if (synced) [uncommitted, commits] = [false, commits + 1];
      } else if (database && name!.includes('write') && metaDescriptors.size > 0) [uncommitted, synced] = [true, false];
      else if (database && (name === 'fdatasync' || name === 'fsync')) synced = true;
      else if (target!.startsWith('socket:') && uncommitted) earlyAnswers += 1;
    }
    expect(earlyAnswers, 'answers written to a socket before the write was committed to disk').toBe(0);
    expect(commits).toBeGreaterThanOrEqual(20);
  });

  it('answers 503 to a write the disk cannot take and to every request after it, reads too (none shows it); a restart has all it answered', async () => {
    const dataDir = join(emulators.folder, 'full-disk');
    // 1,024 blocks: half a megabyte or a megabyte, as the shell counts them; the database file holds a few dozen of these documents.
    const child = await startInChild(dataDir, { fileSizeLimit: 1_024 });
    const filler = 'x'.repeat(16_000);
    const answered: string[] = [];
    let refused: string | undefined;
    for (let index = 0; index < 1_000 && !refused; index++) {
      const id = `filler-${index}`;
      try {
        await child.container.items.create({ id, tenantId: 't1', filler });
        answered.push(id);
      } catch (error) {
        expect((error as { code?: number }).code, String(error)).toBe(503);
        refused = id;
      }
    }
    expect(refused, 'a write past the file size limit was answered as kept').toBeDefined();
    const outcome = (request: Promise<unknown>) =>
      request.then(
        () => 'answered',
        (error: { code?: number }) => error.code,
      );
    expect(await outcome(child.container.items.create({ id: 'small', tenantId: 't1' })), 'a later write').toBe(503);
    expect(await outcome(child.container.item(refused!, 't1').read()), 'a read of the refused write').toBe(503);
    expect(await outcome(child.container.item(answered[0]!, 't1').read()), 'a read of a kept write').toBe(503);
    const feed = child.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() });
    expect(await outcome(feed.readNext()), 'a read of the change feed').toBe(503);
    await child.kill();

    const restarted = await emulators.start(dataDir);
    const { resources } = await tenantData(restarted).items.query<{ id: string }>('SELECT c.id FROM c').fetchAll();
    expect(resources.map(({ id }) => id).sort()).toEqual([...answered].sort());
  });

  it('creates the containers the app needs and keeps their data across a restart', async () => {
    const dataDir = join(emulators.folder, 'clean');
    const first = await emulators.start(dataDir);
    expect(first.restored).toBe(0);
    await tenantData(first).items.create({ id: 'PRJ-1001', tenantId: 't1', type: 'project', name: 'Kept' });
    await tenantData(first).items.create({ id: 'PRJ-1001', tenantId: 't2', type: 'project', name: 'Other tenant' });
    await emulators.close();

    const second = await emulators.start(dataDir);
    expect(second.restored).toBe(2);
    expect(await read(tenantData(second), 'PRJ-1001')).toMatchObject({ name: 'Kept', tenantId: 't1' });
    expect(await read(tenantData(second), 'PRJ-1001', 't2')).toMatchObject({ name: 'Other tenant' });
  });

  it('keeps every acknowledged write of every kind when its process is killed with SIGKILL', async () => {
    const dataDir = join(emulators.folder, 'every-kind');
    const child = await startInChild(dataDir);
    const { container } = child;
    await container.items.create({ id: 'counter', tenantId: 't1', value: 0 });
    await container.items.create({ id: 'created', tenantId: 't1', name: 'Created' });
    await container.items.upsert({ id: 'upserted', tenantId: 't1', name: 'Upserted' });
    await container.items.create({ id: 'replaced', tenantId: 't1', name: 'Before' });
    await container.item('replaced', 't1').replace({ id: 'replaced', tenantId: 't1', name: 'After' });
    await container.items.create({ id: 'patched', tenantId: 't1', name: 'Before', tags: ['a'] });
    await container.item('patched', 't1').patch([
      { op: 'set', path: '/name', value: 'After' },
      { op: 'add', path: '/tags/-', value: 'b' },
    ]);
    await container.items.create({ id: 'deleted', tenantId: 't1' });
    await container.items.create({ id: 'deleted', tenantId: 't2', name: 'Same id, other partition' });
    await container.item('deleted', 't1').delete();
    await container.items.create({ id: 'batch-deleted', tenantId: 't1' });
    await container.items.create({ id: 'batch-replaced', tenantId: 't1', name: 'Before' });
    const { result = [] } = await container.items.batch(
      [
        { operationType: 'Create', partitionKey: 't1', resourceBody: { id: 'batch-created', tenantId: 't1', name: 'Batch' } },
        { operationType: 'Upsert', partitionKey: 't1', resourceBody: { id: 'batch-upserted', tenantId: 't1', name: 'Batch' } },
        { operationType: 'Replace', id: 'batch-replaced', partitionKey: 't1', resourceBody: { id: 'batch-replaced', tenantId: 't1', name: 'After' } },
        { operationType: 'Delete', id: 'batch-deleted', partitionKey: 't1' },
        { operationType: 'Read', id: 'created', partitionKey: 't1' },
      ],
      't1',
    );
    expect(result.map((operation) => operation.statusCode)).toEqual([201, 201, 200, 204, 200]);
    await container.items.create({ id: 'bulk-deleted', tenantId: 't1' });
    const bulk = await container.items.executeBulkOperations([
      { operationType: 'Create', partitionKey: 't1', resourceBody: { id: 'bulk-created', tenantId: 't1', name: 'Bulk' } },
      { operationType: 'Delete', partitionKey: 't1', id: 'bulk-deleted' },
    ]);
    expect(bulk.map((operation) => operation.response?.statusCode)).toEqual([201, 204]);
    const burst = await burstUntilKilled(child, 60);

    const restarted = tenantData(await emulators.start(dataDir));
    expect(await read(restarted, 'created')).toMatchObject({ name: 'Created' });
    expect(await read(restarted, 'upserted')).toMatchObject({ name: 'Upserted' });
    expect(await read(restarted, 'replaced')).toMatchObject({ name: 'After' });
    expect(await read(restarted, 'patched')).toMatchObject({ name: 'After', tags: ['a', 'b'] });
    expect(await read(restarted, 'deleted')).toBeUndefined();
    expect(await read(restarted, 'deleted', 't2')).toMatchObject({ name: 'Same id, other partition' });
    expect(await read(restarted, 'batch-created')).toMatchObject({ name: 'Batch' });
    expect(await read(restarted, 'batch-upserted')).toMatchObject({ name: 'Batch' });
    expect(await read(restarted, 'batch-replaced')).toMatchObject({ name: 'After' });
    expect(await read(restarted, 'batch-deleted')).toBeUndefined();
    expect(await read(restarted, 'bulk-created')).toMatchObject({ name: 'Bulk' });
    expect(await read(restarted, 'bulk-deleted')).toBeUndefined();
    await expectBurstKept(restarted, burst);
  });

  it('shows and keeps what a batch left of a document it wrote and deleted, in the change feed and across a restart', async () => {
    const dataDir = join(emulators.folder, 'batch-last-operation');
    const container = tenantData(await emulators.start(dataDir));
    await container.items.create({ id: 'recreated', tenantId: 't1', name: 'Before' });
    const { result = [] } = await container.items.batch(
      [
        { operationType: 'Create', resourceBody: { id: 'created-then-deleted', tenantId: 't1' } },
        { operationType: 'Delete', id: 'created-then-deleted' },
        { operationType: 'Delete', id: 'recreated' },
        { operationType: 'Create', resourceBody: { id: 'recreated', tenantId: 't1', name: 'After' } },
      ],
      't1',
    );
    expect(result.map((operation) => operation.statusCode)).toEqual([201, 204, 204, 201]);
    const feed = container.items.getChangeFeedIterator<{ id: string }>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() });
    expect((await feed.readNext()).result.map(({ id }) => id)).toEqual(['recreated']);
    await emulators.close();

    const restarted = tenantData(await emulators.start(dataDir));
    expect(await read(restarted, 'created-then-deleted')).toBeUndefined();
    expect(await read(restarted, 'recreated')).toMatchObject({ name: 'After' });
  });

  it('runs a query sent with a partition key in that partition only, whatever its text names, as Cosmos DB does', async () => {
    const container = tenantData(await emulators.start());
    for (const tenantId of ['t1', 't2']) await container.items.create({ id: 'same', tenantId });
    const tenantsOf = async (partitionKey?: string) =>
      (await container.items.query<string>('SELECT VALUE c.tenantId FROM c WHERE c.id = "same"', { partitionKey }).fetchAll()).resources.sort();
    expect(await tenantsOf('t2')).toEqual(['t2']);
    expect(await tenantsOf('t3')).toEqual([]);
    expect(await tenantsOf()).toEqual(['t1', 't2']);
  });

  it('shows no document past its time to live, in reads, queries and the change feed, and takes its id again, as Cosmos DB does', async () => {
    const emulator = await emulators.start();
    const container = tenantData(emulator);
    // tenant-data has `defaultTtl: -1`: a document's own `ttl` counts, none means kept; leases has no TTL at all.
    for (const [id, ttl] of [
      ['brief', 1],
      ['kept', -1],
      ['unset', undefined],
    ] as const)
      await container.items.create({ id, tenantId: 't1', ttl });
    const leases = emulator.client.database('lms').container('leases');
    await leases.items.create({ id: 'lease', ttl: 1 });
    const ids = async () => (await container.items.query<string>('SELECT VALUE c.id FROM c', { partitionKey: 't1' }).fetchAll()).resources.sort();
    await waitFor(async () => (await read(container, 'brief')) === undefined);
    expect(await ids()).toEqual(['kept', 'unset']);
    const feed = container.items.getChangeFeedIterator<Document>({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() });
    expect((await feed.readNext()).result.map(({ id }) => id).sort()).toEqual(['kept', 'unset']);
    expect((await leases.item('lease', 'lease').read()).resource).toBeDefined();
    expect((await container.items.create({ id: 'brief', tenantId: 't1' })).statusCode).toBe(201);
  });

  it('purges the documents past their time to live from memory, the change feed and the disk, unseen in the feed, as Azure does', async () => {
    const dataDir = join(emulators.folder, 'purged');
    const emulator = await emulators.start(dataDir, { purgeInterval: 50 });
    const container = tenantData(emulator);
    const feedFrom = (continuation: string) =>
      container.items.getChangeFeedIterator<Document>({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(continuation) }).readNext();
    const { continuationToken: beforeWrites } = await container.items
      .getChangeFeedIterator<Document>({ changeFeedStartFrom: ChangeFeedStartFrom.Now() })
      .readNext();
    for (const [id, ttl] of [
      ['brief', 1],
      ['kept', -1],
      ['unset', undefined],
    ] as const)
      await container.items.create({ id, tenantId: 't1', ttl, kind: id === 'brief' ? 'short' : 'long' });
    const ofKind = async (kind: string) =>
      (await container.items.query<string>({ query: 'SELECT VALUE c.id FROM c WHERE c.kind = @kind', parameters: [{ name: '@kind', value: kind }] }).fetchAll())
        .resources;
    // Made while `brief` may still be there: the query shortcuts' index of `kind`.
    await ofKind('short');
    const requests = emulator.counts.requests;
    await waitFor(() => held(emulator) === 2);
    expect(emulator.counts.requests, 'what the purge costs the client: nothing').toBe(requests);
    expect(await read(container, 'brief')).toBeUndefined();
    expect(await ofKind('short')).toEqual([]);
    expect((await ofKind('long')).sort()).toEqual(['kept', 'unset']);
    const paged = await container.items.query<string>('SELECT VALUE c.id FROM c', { partitionKey: 't1', maxItemCount: 1 }).fetchAll();
    expect(paged.resources.sort()).toEqual(['kept', 'unset']);
    // A reader's continuation from before still serves: the purge left nothing in the feed.
    const page = await feedFrom(beforeWrites);
    expect(page.result.map(({ id }) => id).sort()).toEqual(['kept', 'unset']);
    expect((await feedFrom(page.continuationToken)).statusCode).toBe(StatusCodes.NotModified);
    await container.items.create({ id: 'later', tenantId: 't1' });
    expect((await feedFrom(page.continuationToken)).result.map(({ id }) => id)).toEqual(['later']);
    await emulators.close();
    expect(await idsOnDisk(dataDir)).toEqual(['kept', 'later', 'unset']);
  });

  it('at start, neither loads nor keeps on disk a document already past its time to live', async () => {
    const dataDir = join(emulators.folder, 'expired-at-start');
    // The default interval, a minute: no purge runs while this test does, but the one at start.
    const emulator = await emulators.start(dataDir);
    const container = tenantData(emulator);
    await container.items.create({ id: 'brief', tenantId: 't1', ttl: 1 });
    await container.items.create({ id: 'kept', tenantId: 't1' });
    await waitFor(async () => (await read(container, 'brief')) === undefined);
    expect(held(emulator)).toBe(2);
    await emulators.close();
    expect(await idsOnDisk(dataDir)).toEqual(['brief', 'kept']);

    const restarted = await emulators.start(dataDir);
    expect(restarted.restored).toBe(1);
    expect(held(restarted)).toBe(1);
    expect(await read(tenantData(restarted), 'kept')).toBeDefined();
    await emulators.close();
    expect(await idsOnDisk(dataDir)).toEqual(['kept']);
  });

  it("keeps a document's _ts, from which its time to live counts, and its _etag across a restart", async () => {
    const dataDir = join(emulators.folder, 'timestamps');
    const container = tenantData(await emulators.start(dataDir));
    const { resource: written } = await container.items.create<Document>({ id: 'kept', tenantId: 't1', ttl: 3600 });
    await emulators.close();
    const restarted = tenantData(await emulators.start(dataDir));
    expect(await read(restarted, 'kept')).toMatchObject({ _ts: written!._ts, _etag: written!._etag });
  });

  it("keeps each document's _rid across a restart, so that a query's continuation goes on where it stopped, as Cosmos DB does", async () => {
    const dataDir = join(emulators.folder, 'resource-ids');
    const container = tenantData(await emulators.start(dataDir));
    for (const id of ['a', 'b', 'gone', 'c', 'd']) await container.items.create<Document>({ id, tenantId: 't1' });
    // A change after the others and a delete: the order of the changes is not that of the documents, and leaves a gap.
    await container.item('a', 't1').replace<Document>({ id: 'a', tenantId: 't1', changed: true });
    await container.item('gone', 't1').delete();
    const ids = (continuationToken?: string) =>
      container.items.query<string>('SELECT VALUE c.id FROM c', { partitionKey: 't1', maxItemCount: 2, ...(continuationToken ? { continuationToken } : {}) });
    const first = await ids().fetchNext();
    expect(first.resources).toEqual(['a', 'b']);
    await emulators.close();
    const restarted = tenantData(await emulators.start(dataDir));
    await restarted.items.create<Document>({ id: 'e', tenantId: 't1' });
    const rest = await restarted.items
      .query<string>('SELECT VALUE c.id FROM c', { partitionKey: 't1', maxItemCount: 2, continuationToken: first.continuationToken })
      .fetchAll();
    expect(rest.resources).toEqual(['c', 'd', 'e']);
  });

  it('patches a document only when its condition holds, checked on that document with its literals as written, as Cosmos DB does', async () => {
    const container = tenantData(await emulators.start());
    for (const tenantId of ['t1', 't2']) await container.items.create({ id: 'P-1', tenantId, status: tenantId === 't1' ? 'Active' : 'Archived' });
    const patch = (condition: string) => container.item('P-1', 't1').patch({ condition, operations: [{ op: 'incr', path: '/n', value: 1 }] });
    expect((await patch("FROM c WHERE c.status = 'Active'")).statusCode).toBe(200);
    // The other tenant's P-1, Archived, is not what the condition reads.
    await expect(patch("FROM c WHERE c.status = 'Archived'")).rejects.toMatchObject({ code: 412 });
    await expect(patch('FROM c WHERE (')).rejects.toMatchObject({ code: 400 });
    expect(await read(container, 'P-1')).toMatchObject({ n: 1 });
  });

  it('keeps ids unique per whole hierarchical key, and takes a prefix of it for a query, as Cosmos DB does', async () => {
    const index = (await emulators.start()).client.database('lms').container('rag-index');
    for (const [tenantId, projectId] of [
      ['t1', 'p1'],
      ['t1', 'p2'],
      ['t2', 'p1'],
    ]) {
      await index.items.create({ id: 'chunk', tenantId, projectId, content: `${tenantId}/${projectId}` });
    }
    expect((await index.item('chunk', ['t1', 'p2']).read<{ content: string }>()).resource?.content).toBe('t1/p2');
    const contentOf = async (partitionKey: string[]) =>
      (await index.items.query<string>('SELECT VALUE c.content FROM c', { partitionKey }).fetchAll()).resources.sort();
    expect(await contentOf(['t1'])).toEqual(['t1/p1', 't1/p2']);
    expect(await contentOf(['t1', 'p2'])).toEqual(['t1/p2']);
    await index.item('chunk', ['t1', 'p1']).delete();
    expect(await contentOf(['t1'])).toEqual(['t1/p2']);
    expect(await contentOf(['t2'])).toEqual(['t2/p1']);
  });

  it('keeps the writes and deletes of a container with a hierarchical partition key across a restart', async () => {
    const dataDir = join(emulators.folder, 'hierarchical');
    const index = (await emulators.start(dataDir)).client.database('lms').container('rag-index');
    // One id in three partitions of a tenant: three documents, as in Cosmos DB.
    for (const projectId of ['p1', 'p2', 'p3']) await index.items.create({ id: 'chunk', tenantId: 't1', projectId, content: projectId });
    await index.item('chunk', ['t1', 'p1']).delete();
    const { result = [] } = await index.items.batch([{ operationType: 'Delete', id: 'chunk', partitionKey: ['t1', 'p2'] }], ['t1', 'p2']);
    expect(result.map((operation) => operation.statusCode)).toEqual([204]);
    await emulators.close();

    const restarted = (await emulators.start(dataDir)).client.database('lms').container('rag-index');
    const { resources } = await restarted.items.query<{ projectId: string }>('SELECT c.projectId FROM c', { partitionKey: ['t1'] }).fetchAll();
    expect(resources).toEqual([{ projectId: 'p3' }]);
  });

  it('loses nothing over two crashes in a row', async () => {
    const dataDir = join(emulators.folder, 'two-crashes');
    const first = await startInChild(dataDir);
    await first.container.items.create({ id: 'first-run', tenantId: 't1' });
    await first.kill();
    const second = await startInChild(dataDir);
    await second.container.items.create({ id: 'second-run', tenantId: 't1' });
    await second.kill();

    const restarted = tenantData(await emulators.start(dataDir));
    expect(await read(restarted, 'first-run')).toBeDefined();
    expect(await read(restarted, 'second-run')).toBeDefined();
  });

  it('refuses a port that is taken with a message naming it, rather than end the process with an unhandled error', async () => {
    const held = await heldPort();
    try {
      await expect(startCosmosEmulator({ port: held.port, host: '127.0.0.1', database: 'lms', tls: emulators.tls })).rejects.toThrow(
        `The embedded Cosmos DB cannot listen on 127.0.0.1:${held.port}: the port is in use.`,
      );
    } finally {
      await held.release();
    }
  });
});
