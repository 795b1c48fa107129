/**
 * Cosmos DB triggers in the local host, against Azure's Functions host and its change feed processor:
 * pages of changes handed to the function, the lease's checkpoint moved only after an invocation,
 * the function's retry policy (and, without one, a failed page skipped, as in Azure), the lease
 * container made only when the binding says so, a failed read of the feed waited out and gone on from, a
 * lease's writes one at a time (behind a proxy that fails or holds requests). Two hosts sharing the leases: the
 * .stack test beside this one.
 */
import type { Container } from '@azure/cosmos';
import type { InvocationContext } from '@azure/functions';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CosmosEmulator } from '../../../local/cosmos/emulator.js';
import { retryDelayMs, startCosmosTriggers, type CosmosTriggers } from '../../../local/host/cosmos-triggers.js';
import type { Registration, RetryOptions } from '../../../local/host/registrations.js';
import { startCosmosProxy, type CosmosProxy, type CosmosRequestRecord } from '../../support/cosmos-proxy.js';
import { waitFor } from '../../support/wait.js';
import { temporaryEmulators } from '../../support/temporary-emulators.js';

interface Item {
  id: string;
  tenantId: string;
}

const trustedTls = inject('trustedTls');
const emulators = temporaryEmulators('cosmos-triggers-test', { tls: trustedTls });
let emulator: CosmosEmulator;
const running: CosmosTriggers[] = [];
const proxies: CosmosProxy[] = [];
const logLines: string[] = [];

beforeAll(async () => {
  emulator = await emulators.start();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((triggers) => triggers.stop(5_000)));
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  logLines.length = 0;
});

/** A container of its own for each test, so that no test sees another's changes. */
async function monitored(): Promise<Container> {
  const { container } = await emulator.client
    .database('lms')
    .containers.create({ id: `items-${Math.random().toString(36).slice(2, 10)}`, partitionKey: { paths: ['/tenantId'] } });
  return container;
}

type Handler = (documents: Item[], context: InvocationContext) => unknown;

/** A registration as `app.cosmosDB(name, { ... })` makes it; the retry policy as `@azure/functions` hands it to the host. */
function cosmosFunction(
  name: string,
  containerName: string,
  handler: Handler,
  options: { retry?: RetryOptions; binding?: Record<string, unknown> } = {},
): Registration {
  return {
    metadata: {
      name,
      bindings: {
        cosmosDBTrigger1a2b3c: {
          name: 'cosmosDBTrigger1a2b3c',
          type: 'cosmosDBTrigger',
          direction: 'in',
          connection: 'TestCosmos',
          databaseName: 'lms',
          containerName,
          leaseContainerName: 'leases',
          leaseContainerPrefix: `${containerName}-`,
          startFromBeginning: true,
          feedPollDelay: 100,
          ...options.binding,
        },
      },
      ...(options.retry ? { retryOptions: options.retry } : {}),
    },
    callback: handler as Registration['callback'],
  };
}

async function start(registrations: Registration[], connectionString = emulator.connectionString): Promise<CosmosTriggers> {
  const triggers = await startCosmosTriggers({
    registrations,
    environment: { TestCosmos: connectionString },
    log: (name, level, message) => logLines.push(`${level} ${name}: ${message}`),
  });
  running.push(triggers);
  return triggers;
}

/** A handler that records every page it is given and runs `behaviour` (which may throw) for each call. */
function recorder(behaviour: (ids: string[], context: InvocationContext, call: number) => unknown = () => undefined) {
  const pages: { ids: string[]; retryCount: number | undefined }[] = [];
  const handler: Handler = (documents, context) => {
    const ids = documents.map((document) => document.id);
    pages.push({ ids, retryCount: context.retryContext?.retryCount });
    return behaviour(ids, context, pages.length - 1);
  };
  return { pages, handler, ids: () => pages.flatMap((page) => page.ids) };
}

const leaseOf = async (prefix: string) => {
  const { resources } = await emulator.client
    .database('lms')
    .container('leases')
    .items.query<{ id: string; Owner: string | null; ContinuationToken: string | null }>({
      query: 'SELECT * FROM c WHERE STARTSWITH(c.id, @prefix)',
      parameters: [{ name: '@prefix', value: prefix }],
    })
    .fetchAll();
  return resources;
};

describe('Cosmos DB triggers in the local host', () => {
  it('hand every change to the function in pages of at most maxItemsPerInvocation, from the beginning, and checkpoint after each', async () => {
    const container = await monitored();
    for (let index = 0; index < 5; index++) await container.items.create({ id: `before-${index}`, tenantId: 't' });
    const { pages, handler, ids } = recorder();
    await start([cosmosFunction('pages', container.id, handler, { binding: { maxItemsPerInvocation: 2 } })]);
    await waitFor(() => ids().length === 5);
    await container.items.create({ id: 'after', tenantId: 't' });
    await waitFor(() => ids().includes('after'));
    expect(ids()).toEqual(['before-0', 'before-1', 'before-2', 'before-3', 'before-4', 'after']);
    expect(pages.every((page) => page.ids.length <= 2)).toBe(true);
    const [lease] = await leaseOf(`${container.id}-`);
    expect(lease).toMatchObject({ id: expect.stringMatching(/\.\.0$/), Owner: expect.any(String), ContinuationToken: expect.any(String) });
  });

  it('resume after their checkpoint when started again, handing over nothing twice and nothing written meanwhile lost', async () => {
    const container = await monitored();
    const first = recorder();
    const triggers = await start([cosmosFunction('resume', container.id, first.handler)]);
    await container.items.create({ id: 'one', tenantId: 't' });
    await waitFor(() => first.ids().includes('one'));
    await triggers.stop(5_000);
    running.splice(running.indexOf(triggers), 1);
    // Released on stop: the next instance takes the lease at once.
    expect((await leaseOf(`${container.id}-`))[0]!.Owner).toBeNull();
    await container.items.create({ id: 'two', tenantId: 't' });
    const second = recorder();
    await start([cosmosFunction('resume', container.id, second.handler)]);
    await waitFor(() => second.ids().includes('two'));
    expect(second.ids()).toEqual(['two']);
  });

  it('retry a failed page as the retry policy says, never skipping it, and checkpoint only once it succeeded', async () => {
    const container = await monitored();
    const failures = 3;
    const { pages, handler } = recorder((_ids, _context, call) => {
      if (call < failures) throw new Error(`refused ${call + 1}`);
    });
    const retry: RetryOptions = { retryStrategy: 'fixedDelay', maxRetryCount: -1, delayInterval: { seconds: 1 } };
    await start([cosmosFunction('retried', container.id, handler, { retry })]);
    await container.items.create({ id: 'stubborn', tenantId: 't' });
    await waitFor(() => pages.length === failures);
    // While it fails, the lease has not moved past it.
    expect((await leaseOf(`${container.id}-`))[0]!.ContinuationToken).toBeNull();
    await waitFor(() => pages.length === failures + 1);
    expect(pages.map((page) => [page.ids, page.retryCount])).toEqual([
      [['stubborn'], 0],
      [['stubborn'], 1],
      [['stubborn'], 2],
      [['stubborn'], 3],
    ]);
    await waitFor(async () => (await leaseOf(`${container.id}-`))[0]!.ContinuationToken);
  });

  it('skip a failed page when the function has no retry policy, as Azure does, and say so', async () => {
    const container = await monitored();
    const { handler, ids } = recorder((batch) => {
      if (batch.includes('doomed')) throw new Error('refused');
    });
    await start([cosmosFunction('unretried', container.id, handler)]);
    await container.items.create({ id: 'doomed', tenantId: 't' });
    await waitFor(() => ids().includes('doomed'));
    await container.items.create({ id: 'next', tenantId: 't' });
    await waitFor(() => ids().includes('next'));
    expect(ids().filter((id) => id === 'doomed')).toHaveLength(1);
    expect(logLines.join('\n')).toMatch(/change\(s\) of the failed invocation are skipped: the function has no retry policy/);
  });

  it('wait between retries as the exponential back-off strategy says', () => {
    const retry: RetryOptions = { retryStrategy: 'exponentialBackoff', maxRetryCount: -1, minimumInterval: { seconds: 1 }, maximumInterval: { seconds: 60 } };
    expect([1, 2, 3, 4, 7, 8].map((count) => retryDelayMs(retry, count))).toEqual([1_000, 2_000, 4_000, 8_000, 60_000, 60_000]);
  });

  it('make the lease container only when the binding says so, and otherwise put the function in error', async () => {
    const container = await monitored();
    const missing = `leases-${Math.random().toString(36).slice(2, 8)}`;
    const refused = await start([cosmosFunction('no-leases', container.id, () => undefined, { binding: { leaseContainerName: missing } })]);
    expect(refused.functions).toEqual([]);
    expect(logLines.join('\n')).toMatch(new RegExp(`The 'no-leases' function is in error: .*lease container '${missing}'`));
    const made = await start([
      cosmosFunction('made-leases', container.id, () => undefined, { binding: { leaseContainerName: missing, createLeaseContainerIfNotExists: true } }),
    ]);
    expect(made.functions).toEqual([{ name: 'made-leases', container: container.id, leaseContainer: missing }]);
    const { resource } = await emulator.client.database('lms').container(missing).read();
    expect(resource?.partitionKey?.paths).toEqual(['/id']);
  });
});

describe('Cosmos DB triggers when the database fails or is slow', () => {
  /** A proxy between the triggers and the database: the network, which a test makes fail or slow. */
  async function proxied(): Promise<CosmosProxy> {
    const proxy = await startCosmosProxy({ endpoint: emulator.endpoint, key: emulator.key, tls: trustedTls, ca: trustedTls.cert });
    proxies.push(proxy);
    return proxy;
  }
  const isLease = ({ path }: CosmosRequestRecord) => path.includes('/colls/leases/docs/');
  const failedReads = () => logLines.filter((line) => line.includes('Cannot read the change feed')).length;

  it('wait after a failed read of the change feed rather than read again at once, and go on once the database answers again', async () => {
    const container = await monitored();
    const proxy = await proxied();
    const { handler, ids } = recorder();
    await start([cosmosFunction('read-failures', container.id, handler, { binding: { leaseRenewInterval: 500 } })], proxy.connectionString);
    await container.items.create({ id: 'before', tenantId: 't' });
    await waitFor(() => ids().includes('before'));
    // The feed's reads are answered 503 (unavailable) until the lease has been renewed three times since the first was: 1 to
    // 1.5 s of the listener's own clock, in which one that waits a second after each failure (READ_FAILURE_BACKOFF_MS) fails twice at most.
    let renewals: number | undefined;
    let failedDuringOutage: number | undefined;
    proxy.intercept = (request) => {
      if (request.isChangeFeed) renewals ??= 0;
      else if (renewals !== undefined && isLease(request) && request.method === 'PUT' && ++renewals === 3) {
        failedDuringOutage = failedReads();
        proxy.intercept = undefined;
      }
      return request.isChangeFeed ? { status: 503, body: { code: 'ServiceUnavailable', message: 'The database is unavailable' } } : undefined;
    };
    await container.items.create({ id: 'during', tenantId: 't' });
    await waitFor(() => ids().includes('during'));
    expect(failedDuringOutage).toBeGreaterThanOrEqual(1);
    expect(failedDuringOutage, 'failed reads of the change feed in three renewal intervals').toBeLessThanOrEqual(4);
    expect(ids()).toEqual(['before', 'during']);
  });

  it('write a lease one write at a time: a checkpoint waits for a renewal still on its way rather than race it and lose the lease', async () => {
    const container = await monitored();
    const proxy = await proxied();
    let handedSecond = false;
    const { handler, ids } = recorder((batch) => {
      handedSecond ||= batch.includes('second');
    });
    const binding = { leaseRenewInterval: 300, leaseAcquireInterval: 100, leaseExpirationInterval: 3_000 };
    await start([cosmosFunction('lease-writes', container.id, handler, { binding })], proxy.connectionString);
    await container.items.create({ id: 'first', tenantId: 't' });
    await waitFor(async () => (await leaseOf(`${container.id}-`))[0]?.ContinuationToken);
    // The lease's next write, a renewal (nothing else is under way), is slow to reach the database: it goes on when another
    // write of the lease comes, or once the listener has read the leases twice since it handed 'second' over, by when it has
    // sent the checkpoint after it, or queued it. Sent together, both carry the lease's ETag: the database refuses one (412).
    let release: (() => void) | undefined;
    let leaseReads = 0;
    proxy.intercept = (request) => {
      if (!isLease(request)) return undefined;
      if (request.method === 'PUT' && !release) return new Promise<undefined>((resolve) => (release = () => resolve(undefined)));
      if (request.method === 'PUT' || (handedSecond && ++leaseReads === 2)) {
        proxy.intercept = undefined;
        release!();
      }
      return undefined;
    };
    await waitFor(() => release);
    await container.items.create({ id: 'second', tenantId: 't' });
    await waitFor(() => !proxy.intercept);
    await container.items.create({ id: 'third', tenantId: 't' });
    await waitFor(() => ids().includes('third'));
    // Else the checkpoint refused leaves 'second' to be handed over again, or the renewal refused stops the work till the lease expires.
    expect(ids()).toEqual(['first', 'second', 'third']);
    expect(logLines.filter((line) => line.includes('lost by instance'))).toEqual([]);
  });
});
