/**
 * Cosmos DB triggers as Azure's Functions host runs them, over the change feed processor that
 * `@azure/cosmos` for JavaScript lacks: leases, checkpoints and retries as docs/local-stack.md describes.
 */
import { randomUUID } from 'node:crypto';
import { ChangeFeedStartFrom, CosmosClient, StatusCodes, type Container } from '@azure/cosmos';
import { z } from 'zod';
import {
  connectionSetting,
  errorMessage,
  invocationContext,
  invoke,
  parsed,
  pause,
  resolveBindingExpression,
  startTriggers,
  type Binding,
  type Environment,
  type Registration,
  type RetryOptions,
  type TriggerHost,
  type Triggers,
} from './registrations.js';

/** After a failed read of the change feed (the database unreachable), the range's next try waits this long. */
const READ_FAILURE_BACKOFF_MS = 1_000;

export type CosmosTriggers = Triggers<{ name: string; container: string; leaseContainer: string }>;

/** A lease as the change feed processor keeps one per range in the lease container: the fields read here. */
interface Lease {
  id: string;
  _etag: string;
  LeaseToken: string;
  Owner: string | null;
  /** Where the range's next read starts: the change feed continuation after the last page handled. */
  ContinuationToken: string | null;
  timestamp: string;
}

/** The binding's settings, `%NAME%` resolved, with the extension's defaults (intervals in milliseconds). */
function cosmosBinding(trigger: Binding, environment: Environment) {
  const resolved = z.string().transform((expression) => resolveBindingExpression(expression, environment));
  const milliseconds = (fallback: number) => z.int().positive().default(fallback);
  const schema = z
    .object({
      connection: z.string(),
      leaseConnection: z.string().optional(),
      databaseName: resolved,
      containerName: resolved,
      leaseDatabaseName: resolved.optional(),
      leaseContainerName: resolved.default('leases'),
      leaseContainerPrefix: resolved.default(''),
      createLeaseContainerIfNotExists: z.boolean().default(false),
      maxItemsPerInvocation: z.int().positive().optional(),
      startFromBeginning: z.boolean().default(false),
      startFromTime: z.coerce.date().optional(),
      feedPollDelay: milliseconds(5_000),
      leaseAcquireInterval: milliseconds(13_000),
      leaseExpirationInterval: milliseconds(60_000),
      leaseRenewInterval: milliseconds(17_000),
    })
    .refine((binding) => !(binding.startFromBeginning && binding.startFromTime), 'Only one of startFromBeginning or startFromTime can be used');
  return parsed(schema, trigger, 'the Cosmos DB trigger');
}

/** The account behind a binding's `connection`, and its endpoint. */
function cosmosAccount(connection: string, environment: Environment): { client: CosmosClient; endpoint: string } {
  const setting = connectionSetting(connection, 'accountEndpoint', environment);
  if ('uri' in setting) return { client: new CosmosClient({ endpoint: setting.uri, aadCredentials: setting.credential }), endpoint: setting.uri };
  return { client: new CosmosClient(setting), endpoint: /AccountEndpoint=([^;]+)/.exec(setting.connectionString)![1]! };
}

/** The wait before retry `retryCount` (1 for the first), as the host's fixed-delay and exponential back-off strategies give it. */
export function retryDelayMs(retry: RetryOptions, retryCount: number): number {
  const ms = (duration?: { seconds: number }) => (duration?.seconds ?? 0) * 1000;
  if (retry.retryStrategy === 'fixedDelay') return ms(retry.delayInterval);
  return Math.min(ms(retry.maximumInterval), ms(retry.minimumInterval) * 2 ** (retryCount - 1));
}

/** The monitored container's ranges, each with its lease (made by whichever instance comes first); fails, as Azure's, when either container is missing. */
async function leaseRanges(monitored: Container, leases: Container, leasePrefix: string, endpoint: string) {
  const [{ resource: container }, { resource: database }] = await Promise.all([monitored.read(), monitored.database.read(), leases.read()]);
  const { resources: ranges } = await monitored.readPartitionKeyRanges().fetchAll();
  const feedRanges = await monitored.getFeedRanges();
  // As the change feed processor names its leases: prefix, account, database and container, then the range. The
  // account's host name without a port: the embedded store's port changes from one start to the next.
  const prefix = `${leasePrefix}${new URL(endpoint).hostname}_${database!._rid}_${container!._rid}..`;
  return Promise.all(
    ranges.map(async ({ id: token, minInclusive: min, maxExclusive: max }) => {
      const id = `${prefix}${token}`;
      const fresh = { id, version: 1, LeaseToken: token, FeedRange: { EffectiveRange: { min, max } }, Owner: null, ContinuationToken: null };
      await leases.items.create({ ...fresh, timestamp: new Date().toISOString() }).catch((error: { code?: number }) => {
        if (error.code !== StatusCodes.Conflict) throw error;
      });
      return { id, range: feedRanges.find((range) => range.minInclusive === min && range.maxExclusive === max)! };
    }),
  );
}

/** Listens to one function's container, as an instance of the change feed processor named `instance`. */
async function listen(
  { metadata: { name, retryOptions: retry }, callback: handler }: Registration,
  trigger: Binding,
  { environment, log }: TriggerHost,
  instance: string,
) {
  const binding = cosmosBinding(trigger, environment);
  const { databaseName, containerName, leaseContainerName } = binding;
  const leaseDatabaseName = binding.leaseDatabaseName ?? databaseName;
  const { client, endpoint } = cosmosAccount(binding.connection, environment);
  const leaseClient = binding.leaseConnection ? cosmosAccount(binding.leaseConnection, environment).client : client;
  if (binding.createLeaseContainerIfNotExists) {
    await leaseClient.database(leaseDatabaseName).containers.createIfNotExists({ id: leaseContainerName, partitionKey: { paths: ['/id'] } });
  }
  const monitored = client.database(databaseName).container(containerName);
  const leases = leaseClient.database(leaseDatabaseName).container(leaseContainerName);
  const ranges = await leaseRanges(monitored, leases, binding.leaseContainerPrefix, endpoint).catch((error: { code?: number }) => {
    if (error.code !== StatusCodes.NotFound) throw error;
    throw new Error(
      `Either the container '${containerName}' (in database '${databaseName}') or the lease container '${leaseContainerName}' ` +
        `(in database '${leaseDatabaseName}') does not exist. Both must exist before the listener starts; ` +
        'to create the lease container, set createLeaseContainerIfNotExists to true.',
      { cause: error },
    );
  });
  const stopping = new AbortController();
  /** The leases this instance holds: the latest version of each, the work on its range, its writes one at a time (a renewal never races a checkpoint). */
  const held = new Map<string, { lease: Lease; lost: AbortController; work: Promise<void>; writing: Promise<boolean> }>();

  /** Takes free or expired leases up to this instance's fair share. */
  async function acquire(): Promise<void> {
    if (stopping.signal.aborted) return;
    try {
      const all = await Promise.all(ranges.map(async ({ id }) => (await leases.item(id, id).read<Lease>()).resource!));
      const now = Date.now();
      const free = (lease: Lease) => lease.Owner === null || Date.parse(lease.timestamp) + binding.leaseExpirationInterval < now;
      const owners = new Set([instance, ...all.filter((lease) => !free(lease)).map((lease) => lease.Owner)]);
      for (const lease of all.filter((lease) => free(lease) && !held.has(lease.id))) {
        if (held.size >= Math.ceil(all.length / owners.size) || stopping.signal.aborted) break;
        const taken = { ...lease, Owner: instance, timestamp: new Date().toISOString() };
        const replaced = await leases
          .item(lease.id, lease.id)
          .replace<Lease>(taken, { accessCondition: { type: 'IfMatch', condition: lease._etag } })
          .catch((error: { code?: number }) => {
            // Another instance took it first.
            if (error.code !== StatusCodes.PreconditionFailed) throw error;
          });
        if (replaced) hold(replaced.resource!);
      }
    } catch (error) {
      log(name, 'warning', `Cannot acquire leases: ${errorMessage(error)}`);
    }
  }

  function hold(lease: Lease): void {
    const lost = new AbortController();
    log(name, 'information', `Lease ${lease.LeaseToken} acquired by instance ${instance}`);
    const holding = { lease, lost, work: Promise.resolve(), writing: Promise.resolve(true) };
    held.set(lease.id, holding);
    // A lease lost is let go of; one held when the work stops on a stop is released by the stop.
    holding.work = follow(lease.id, lost.signal).finally(() => {
      if (lost.signal.aborted) held.delete(lease.id);
    });
  }

  const touched = (lease: Lease): Lease => ({ ...lease, timestamp: new Date().toISOString() });

  /** Writes a held lease after the writes before it: false when it is another instance's now (taken over once expired), which ends the work on its range. */
  function write(id: string, change: (lease: Lease) => Lease): Promise<boolean> {
    const holding = held.get(id);
    if (!holding) return Promise.resolve(false);
    holding.writing = holding.writing.then(async () => {
      if (holding.lost.signal.aborted) return false;
      try {
        const { resource } = await leases
          .item(id, id)
          .replace<Lease>(change(holding.lease), { accessCondition: { type: 'IfMatch', condition: holding.lease._etag } });
        holding.lease = resource!;
        return true;
      } catch (error) {
        const code = (error as { code?: number }).code;
        if (code !== StatusCodes.PreconditionFailed && code !== StatusCodes.NotFound) {
          log(name, 'warning', `Cannot write lease ${holding.lease.LeaseToken}: ${errorMessage(error)}`);
          return true;
        }
        log(name, 'information', `Lease ${holding.lease.LeaseToken} lost by instance ${instance}`);
        holding.lost.abort();
        return false;
      }
    });
    return holding.writing;
  }

  /** Reads the range's changes from its lease's continuation, hands each page to the function, and checkpoints after it. */
  async function follow(id: string, lost: AbortSignal): Promise<void> {
    const ended = AbortSignal.any([lost, stopping.signal]);
    const { lease } = held.get(id)!;
    const { range } = ranges.find((each) => each.id === id)!;
    const from = lease.ContinuationToken
      ? ChangeFeedStartFrom.Continuation(lease.ContinuationToken)
      : binding.startFromBeginning
        ? ChangeFeedStartFrom.Beginning(range)
        : binding.startFromTime
          ? ChangeFeedStartFrom.Time(binding.startFromTime, range)
          : ChangeFeedStartFrom.Now(range);
    const { maxItemsPerInvocation: maxItemCount } = binding;
    const feed = monitored.items.getChangeFeedIterator({ changeFeedStartFrom: from, ...(maxItemCount ? { maxItemCount } : {}) });
    while (!ended.aborted) {
      const page = await feed.readNext().catch((error: unknown) => {
        log(name, 'warning', `Cannot read the change feed of range ${lease.LeaseToken}: ${errorMessage(error)}`);
      });
      if (!page || page.statusCode === StatusCodes.NotModified || page.result.length === 0) {
        await pause(page ? binding.feedPollDelay : READ_FAILURE_BACKOFF_MS, ended);
        continue;
      }
      // An invocation cut short by the stop is not checkpointed: the next holder reads its changes again.
      if (!(await invokeWithRetries(page.result, ended)) || lost.aborted) return;
      const { continuationToken } = page;
      if (!(await write(id, (current) => touched({ ...current, ContinuationToken: continuationToken })))) return;
    }
  }

  /** One page of changes to the function, with its retry policy: false when the stop cut it short, true once it succeeded or was skipped. */
  async function invokeWithRetries(documents: unknown[], ended: AbortSignal): Promise<boolean> {
    for (let retryCount = 0; ; retryCount++) {
      const context = invocationContext(name, trigger, log, retry ? { retryContext: { retryCount, maxRetryCount: retry.maxRetryCount } } : {});
      if (await invoke(context, () => handler(documents, context))) return true;
      if (!retry || (retry.maxRetryCount !== -1 && retryCount >= retry.maxRetryCount)) {
        const because = retry ? 'its retries are used up' : 'the function has no retry policy';
        log(name, 'warning', `The ${documents.length} change(s) of the failed invocation are skipped: ${because}`);
        return true;
      }
      if (!(await pause(retryDelayMs(retry, retryCount + 1), ended))) return false;
    }
  }

  await acquire();
  const renew = () => void Promise.allSettled([...held.keys()].map((id) => write(id, touched)));
  const timers = [setInterval(() => void acquire(), binding.leaseAcquireInterval), setInterval(renew, binding.leaseRenewInterval)];
  for (const timer of timers) timer.unref();
  return {
    info: { name, container: containerName, leaseContainer: leaseContainerName },
    // Stops reading, then, once the invocations under way are done, releases the leases: another instance takes the ranges at its next look.
    stop: async () => {
      stopping.abort();
      for (const timer of timers) clearInterval(timer);
      await Promise.allSettled([...held.values()].map(({ work }) => work));
      await Promise.allSettled([...held.keys()].map((id) => write(id, (lease) => ({ ...lease, Owner: null }))));
    },
  };
}

/** Starts a listener for every Cosmos DB trigger; `instance` is this host's name in the leases it holds: a new one each start, as Azure's. */
export function startCosmosTriggers(host: TriggerHost & { instance?: string }): Promise<CosmosTriggers> {
  const instance = host.instance ?? randomUUID();
  return startTriggers(host, 'cosmosDBTrigger', (registration, trigger) => listen(registration, trigger, host, instance));
}
