/**
 * Cosmos DB triggers as Azure's Functions host runs them, over the change feed processor
 * (docs/local-stack.md): a lease per partition key range in the lease container, held by one instance at
 * a time, renewed, taken over once expired; each page of changes handed to the function, with its retry
 * policy, and the lease's continuation moved on only after the invocation (the checkpoint).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChangeFeedStartFrom, CosmosClient, StatusCodes, type Container, type FeedRange } from '@azure/cosmos';
import { DefaultAzureCredential } from '@azure/identity';
import {
  errorMessage,
  invocationContext,
  invoke,
  resolveBindingExpression,
  startTriggers,
  type Binding,
  type LogFunction,
  type Registration,
  type RetryOptions,
  type Triggers,
} from './registrations.js';

/** The extension's defaults, in milliseconds, where the binding names none. */
const DEFAULTS = { feedPollDelay: 5_000, leaseAcquireInterval: 13_000, leaseExpirationInterval: 60_000, leaseRenewInterval: 17_000 };
/** After a failed read of the change feed (the database unreachable), the range's next try waits this long. */
const READ_FAILURE_BACKOFF_MS = 1_000;

export interface CosmosFunction {
  name: string;
  container: string;
  leaseContainer: string;
}

export type CosmosTriggers = Triggers<CosmosFunction>;

/** A lease, as the change feed processor keeps one per range in the lease container. */
interface Lease {
  id: string;
  _etag: string;
  version: 1;
  LeaseToken: string;
  FeedRange: { EffectiveRange: { min: string; max: string } };
  Owner: string | null;
  /** Where the range's next read starts: the change feed continuation after the last page handled. */
  ContinuationToken: string | null;
  timestamp: string;
}

interface ListenerOptions {
  name: string;
  trigger: Binding;
  handler: Registration['callback'];
  retry: RetryOptions | undefined;
  monitored: Container;
  leases: Container;
  leasePrefix: string;
  accountEndpoint: string;
  instance: string;
  intervals: typeof DEFAULTS;
  maxItems: number | undefined;
  startFrom: { beginning: true } | { time: Date } | { now: true };
  log: LogFunction;
}

/** The account behind a binding's `connection`: a connection string, or the identity-based `<connection>__accountEndpoint`. */
function cosmosClient(connection: string, environment: Record<string, string | undefined>): { client: CosmosClient; endpoint: string } {
  const connectionString = environment[connection]?.trim();
  if (connectionString) {
    const client = new CosmosClient({ connectionString });
    return { client, endpoint: /AccountEndpoint=([^;]+)/.exec(connectionString)![1]! };
  }
  const endpoint = environment[`${connection}__accountEndpoint`]?.trim();
  if (endpoint) return { client: new CosmosClient({ endpoint, aadCredentials: new DefaultAzureCredential() }), endpoint };
  throw new Error(`neither ${connection} nor ${connection}__accountEndpoint is set`);
}

/** The wait before retry `retryCount` (1 for the first), as the host's fixed-delay and exponential back-off strategies give it. */
export function retryDelayMs(retry: RetryOptions, retryCount: number): number {
  const seconds = (duration: { seconds?: number } | undefined) => (duration?.seconds ?? 0) * 1000;
  if (retry.retryStrategy === 'fixedDelay') return seconds(retry.delayInterval);
  const minimum = seconds(retry.minimumInterval);
  return Math.min(seconds(retry.maximumInterval), minimum * 2 ** (retryCount - 1));
}

class CosmosTriggerListener {
  readonly #options: ListenerOptions;
  readonly #stopping = new AbortController();
  /** The leases this instance holds, the latest version of each, and the work on its range. */
  readonly #held = new Map<string, { lease: Lease; lost: AbortController; work: Promise<void> }>();
  /** Lease writes of this instance, one at a time per lease, so that a renewal never races a checkpoint. */
  readonly #writes = new Map<string, Promise<unknown>>();
  /** The monitored container's partition key ranges, and their leases' ids. */
  #ranges: { id: string; token: string; range: FeedRange }[] = [];
  #timers: NodeJS.Timeout[] = [];

  constructor(options: ListenerOptions) {
    this.#options = options;
  }

  /** Fails, as Azure's listener does, when either container is missing. */
  async start(): Promise<void> {
    const { monitored, leases, leasePrefix } = this.#options;
    const [{ resource: container }, { resource: database }] = await Promise.all([monitored.read(), monitored.database.read()]);
    await leases.read();
    const { resources: ranges } = await monitored.readPartitionKeyRanges().fetchAll();
    const feedRanges = await monitored.getFeedRanges();
    // As the change feed processor names its leases: prefix, account, database and container, then the range. The
    // account's host name without a port: the embedded store's port changes from one start to the next.
    const prefix = `${leasePrefix}${new URL(this.#options.accountEndpoint).hostname}_${database!._rid}_${container!._rid}..`;
    this.#ranges = ranges.map((range) => ({
      id: `${prefix}${range.id}`,
      token: String(range.id),
      range: feedRanges.find((feedRange) => feedRange.minInclusive === range.minInclusive && feedRange.maxExclusive === range.maxExclusive)!,
    }));
    await this.#acquire();
    const { leaseAcquireInterval, leaseRenewInterval } = this.#options.intervals;
    this.#timers = [setInterval(() => void this.#acquire(), leaseAcquireInterval), setInterval(() => void this.#renew(), leaseRenewInterval)];
    for (const timer of this.#timers) timer.unref();
  }

  /** Stops reading; once the invocations under way are done, releases the leases. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    for (const timer of this.#timers) clearInterval(timer);
    await Promise.allSettled([...this.#held.values()].map(({ work }) => work));
    // Released, another instance takes the ranges at its next look, without waiting for them to expire.
    await Promise.allSettled([...this.#held.keys()].map((id) => this.#write(id, (lease) => ({ ...lease, Owner: null }))));
  }

  /** Makes the leases of new ranges, and takes free or expired ones up to this instance's fair share. */
  async #acquire(): Promise<void> {
    if (this.#stopping.signal.aborted) return;
    const { leases, instance, intervals, log, name } = this.#options;
    try {
      const all: Lease[] = [];
      for (const { id, token, range } of this.#ranges) {
        const { minInclusive: min, maxExclusive: max } = range;
        const fresh = { id, version: 1, LeaseToken: token, FeedRange: { EffectiveRange: { min, max } }, Owner: null, ContinuationToken: null };
        // Made by whichever instance comes first.
        await leases.items.create({ ...fresh, timestamp: new Date().toISOString() }).catch((error: { code?: number }) => {
          if (error.code !== StatusCodes.Conflict) throw error;
        });
        all.push((await leases.item(id, id).read<Lease>()).resource!);
      }
      const now = Date.now();
      const free = (lease: Lease) => lease.Owner === null || Date.parse(lease.timestamp) + intervals.leaseExpirationInterval < now;
      const owners = new Set([instance, ...all.filter((lease) => !free(lease)).map((lease) => lease.Owner)]);
      for (const lease of all.filter((lease) => free(lease) && !this.#held.has(lease.id))) {
        if (this.#held.size >= Math.ceil(all.length / owners.size) || this.#stopping.signal.aborted) break;
        const taken = { ...lease, Owner: instance, timestamp: new Date().toISOString() };
        const replaced = await leases
          .item(lease.id, lease.id)
          .replace<Lease>(taken, { accessCondition: { type: 'IfMatch', condition: lease._etag } })
          .catch((error: { code?: number }) => {
            // Another instance took it first.
            if (error.code !== StatusCodes.PreconditionFailed) throw error;
          });
        if (replaced) this.#hold(replaced.resource!);
      }
    } catch (error) {
      log(name, 'warning', `Cannot acquire leases: ${errorMessage(error)}`);
    }
  }

  #hold(lease: Lease): void {
    const lost = new AbortController();
    this.#options.log(this.#options.name, 'information', `Lease ${lease.LeaseToken} acquired by instance ${this.#options.instance}`);
    const held = { lease, lost, work: Promise.resolve() };
    this.#held.set(lease.id, held);
    // A lease lost is let go of; one held when the work stops on a stop is released by the stop.
    held.work = this.#process(lease.id, lost.signal).finally(() => {
      if (lost.signal.aborted) this.#held.delete(lease.id);
    });
  }

  async #renew(): Promise<void> {
    await Promise.allSettled([...this.#held.keys()].map((id) => this.#write(id, (lease) => ({ ...lease, timestamp: new Date().toISOString() }))));
  }

  /**
   * Writes a held lease, one write at a time: false when the lease turns out to be another instance's
   * now (taken over after it expired), which ends this instance's work on its range.
   */
  #write(id: string, change: (lease: Lease) => Lease): Promise<boolean> {
    const previous = this.#writes.get(id) ?? Promise.resolve();
    const next = previous.then(async () => {
      const held = this.#held.get(id);
      if (!held) return false;
      const { leases, instance, log, name } = this.#options;
      try {
        const { resource } = await leases
          .item(id, id)
          .replace<Lease>(change(held.lease), { accessCondition: { type: 'IfMatch', condition: held.lease._etag } });
        held.lease = resource!;
        return true;
      } catch (error) {
        const code = (error as { code?: number }).code;
        if (code !== StatusCodes.PreconditionFailed && code !== StatusCodes.NotFound) {
          log(name, 'warning', `Cannot write lease ${held.lease.LeaseToken}: ${errorMessage(error)}`);
          return true;
        }
        log(name, 'information', `Lease ${held.lease.LeaseToken} lost by instance ${instance}`);
        held.lost.abort();
        return false;
      }
    });
    const settled = next.catch(() => false);
    this.#writes.set(id, settled);
    return next;
  }

  /** Reads the range's changes from its lease's continuation, hands each page to the function, and checkpoints after it. */
  async #process(id: string, lost: AbortSignal): Promise<void> {
    const { monitored, intervals, maxItems, startFrom, log, name } = this.#options;
    const ended = AbortSignal.any([lost, this.#stopping.signal]);
    const held = this.#held.get(id)!;
    const range = this.#ranges.find(({ token }) => token === held.lease.LeaseToken)!.range;
    const continuation = held.lease.ContinuationToken;
    const from = continuation
      ? ChangeFeedStartFrom.Continuation(continuation)
      : 'beginning' in startFrom
        ? ChangeFeedStartFrom.Beginning(range)
        : 'time' in startFrom
          ? ChangeFeedStartFrom.Time(startFrom.time, range)
          : ChangeFeedStartFrom.Now(range);
    const feed = monitored.items.getChangeFeedIterator({ changeFeedStartFrom: from, ...(maxItems ? { maxItemCount: maxItems } : {}) });
    while (!ended.aborted) {
      let page;
      try {
        page = await feed.readNext();
      } catch (error) {
        log(name, 'warning', `Cannot read the change feed of range ${held.lease.LeaseToken}: ${errorMessage(error)}`);
        await sleep(READ_FAILURE_BACKOFF_MS, undefined, { signal: ended }).catch(() => undefined);
        continue;
      }
      if (page.statusCode === StatusCodes.NotModified || page.result.length === 0) {
        await sleep(intervals.feedPollDelay, undefined, { signal: ended }).catch(() => undefined);
        continue;
      }
      const outcome = await this.#invoke(page.result, ended);
      // An invocation cut short by the stop is not checkpointed: the next holder reads its changes again.
      if (outcome === 'stopped' || lost.aborted) return;
      if (!(await this.#write(id, (lease) => ({ ...lease, ContinuationToken: page.continuationToken, timestamp: new Date().toISOString() })))) return;
    }
  }

  /** One page of changes to the function, with its retry policy: 'done', 'skipped' (failed, and retries used up or none) or 'stopped'. */
  async #invoke(documents: unknown[], ended: AbortSignal): Promise<'done' | 'skipped' | 'stopped'> {
    const { name, trigger, handler, retry, log } = this.#options;
    for (let retryCount = 0; ; retryCount++) {
      const context = invocationContext(name, trigger, log, retry ? { retryContext: { retryCount, maxRetryCount: retry.maxRetryCount } } : {});
      if (await invoke(context, () => handler(documents, context), log)) return 'done';
      if (!retry || (retry.maxRetryCount !== -1 && retryCount >= retry.maxRetryCount)) {
        const because = retry ? 'its retries are used up' : 'the function has no retry policy';
        log(name, 'warning', `The ${documents.length} change(s) of the failed invocation are skipped: ${because}`);
        return 'skipped';
      }
      const stopped = await sleep(retryDelayMs(retry, retryCount + 1), false, { signal: ended }).catch(() => true);
      if (stopped) return 'stopped';
    }
  }
}

function positive(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || (value as number) <= 0) throw new Error(`${name} must be a whole number of milliseconds, not ${JSON.stringify(value)}`);
  return value as number;
}

/** Starts a listener for every registration whose trigger is a Cosmos DB change feed. */
export function startCosmosTriggers(options: {
  registrations: Registration[];
  environment: Record<string, string | undefined>;
  log: LogFunction;
  /** This host's name in the leases it holds: a new one each start, as Azure's. */
  instance?: string;
}): Promise<CosmosTriggers> {
  const { environment, log } = options;
  const instance = options.instance ?? randomUUID();
  return startTriggers(options.registrations, 'cosmosDBTrigger', log, async ({ metadata: { name, retryOptions }, callback: handler }, trigger) => {
    const resolve = (value: string | undefined) => (value === undefined ? undefined : resolveBindingExpression(value, environment));
    const databaseName = resolve(trigger.databaseName)!;
    const containerName = resolve(trigger.containerName)!;
    const leaseDatabaseName = resolve(trigger.leaseDatabaseName) ?? databaseName;
    const leaseContainerName = resolve(trigger.leaseContainerName) ?? 'leases';
    const { client, endpoint } = cosmosClient(trigger.connection!, environment);
    const leaseClient = trigger.leaseConnection ? cosmosClient(trigger.leaseConnection, environment).client : client;
    if (trigger.startFromBeginning && trigger.startFromTime) throw new Error('Only one of startFromBeginning or startFromTime can be used');
    const startTime = trigger.startFromTime === undefined ? undefined : new Date(trigger.startFromTime);
    if (startTime && Number.isNaN(startTime.getTime())) throw new Error(`startFromTime ${trigger.startFromTime} is not an ISO 8601 date and time`);
    if (trigger.createLeaseContainerIfNotExists) {
      await leaseClient.database(leaseDatabaseName).containers.createIfNotExists({ id: leaseContainerName, partitionKey: { paths: ['/id'] } });
    }
    const listener = new CosmosTriggerListener({
      name,
      trigger,
      handler,
      retry: retryOptions,
      monitored: client.database(databaseName).container(containerName),
      leases: leaseClient.database(leaseDatabaseName).container(leaseContainerName),
      leasePrefix: resolve(trigger.leaseContainerPrefix) ?? '',
      accountEndpoint: endpoint,
      instance,
      intervals: Object.fromEntries(
        Object.entries(DEFAULTS).map(([setting, fallback]) => [setting, positive(setting, trigger[setting as keyof typeof DEFAULTS], fallback)]),
      ) as typeof DEFAULTS,
      maxItems: trigger.maxItemsPerInvocation,
      startFrom: trigger.startFromBeginning ? { beginning: true } : startTime ? { time: startTime } : { now: true },
      log,
    });
    try {
      await listener.start();
    } catch (error) {
      if ((error as { code?: number }).code !== StatusCodes.NotFound) throw error;
      throw new Error(
        `Either the container '${containerName}' (in database '${databaseName}') or the lease container '${leaseContainerName}' ` +
          `(in database '${leaseDatabaseName}') does not exist. Both must exist before the listener starts; ` +
          'to create the lease container, set createLeaseContainerIfNotExists to true.',
        { cause: error },
      );
    }
    return { info: { name, container: containerName, leaseContainer: leaseContainerName }, stop: () => listener.stop() };
  });
}
