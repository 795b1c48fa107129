/**
 * Storage queue triggers the way Azure's Functions host runs them: each queue is polled with back-off,
 * messages are handled in batches, a handler that throws sees its message again after host.json's
 * `visibilityTimeout`, and after `maxDequeueCount` attempts the message moves to `<queue>-poison`.
 * The handler gets what the Node worker gives it: the message parsed as JSON when it is JSON, else the
 * string, and an InvocationContext whose triggerMetadata carries the message's properties.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DefaultAzureCredential } from '@azure/identity';
import { QueueServiceClient, type QueueClient, type ReceivedMessageItem } from '@azure/storage-queue';
import { SETTINGS } from '../shared/settings.js';
import { invocationContext, resolveBindingExpression, triggerOf, type Binding, type LogFunction, type Registration } from './registrations.js';

/**
 * How long a received message stays invisible while its handler runs, renewed at half time as Azure's
 * listener renews it, so a slow handler keeps its message and a crashed host's messages come back.
 * Azure's is ten minutes; LOCAL_QUEUE_MESSAGE_LEASE (seconds) shortens it, for tests that kill a host.
 */
const DEFAULT_MESSAGE_LEASE_SECONDS = Number(SETTINGS.LOCAL_QUEUE_MESSAGE_LEASE.default);
/** Azure's shortest polling interval; the back-off starts here when a queue is empty. */
const MIN_POLLING_INTERVAL_MS = 100;
/** The most messages the storage service hands out per request. */
const MAX_BATCH_SIZE = 32;
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// Azure's queue name rules: 3-63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit.
const QUEUE_NAME = /^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/** host.json's `extensions.queues`, with Azure's defaults. */
export interface QueueExtensionSettings {
  maxDequeueCount: number;
  /** The delay before the message of a failed invocation is visible again. */
  visibilityTimeoutMs: number;
  maxPollingIntervalMs: number;
  batchSize: number;
  /** A new batch is fetched once no more than this many messages are still being handled. */
  newBatchThreshold: number;
  messageEncoding: 'base64' | 'none';
}

export interface QueueFunction {
  name: string;
  queue: string;
}

export interface QueueTriggersOptions {
  registrations: Registration[];
  settings: QueueExtensionSettings;
  /** The app settings, where `%NAME%` queue names and connections are looked up. */
  environment: Record<string, string | undefined>;
  log: LogFunction;
}

function messageLeaseSeconds(environment: QueueTriggersOptions['environment']): number {
  const setting = environment.LOCAL_QUEUE_MESSAGE_LEASE;
  if (setting === undefined || setting === '') return DEFAULT_MESSAGE_LEASE_SECONDS;
  const seconds = Number(setting);
  if (!Number.isInteger(seconds) || seconds < 2 || seconds > DEFAULT_MESSAGE_LEASE_SECONDS) {
    throw new Error(`LOCAL_QUEUE_MESSAGE_LEASE must be a whole number of seconds from 2 to ${DEFAULT_MESSAGE_LEASE_SECONDS}, not ${JSON.stringify(setting)}`);
  }
  return seconds;
}

export interface QueueTriggers {
  /** The queue functions that are listening (a function whose binding cannot be resolved is logged and left out). */
  functions: QueueFunction[];
  /** Stops polling and waits, at most `graceMs`, for the invocations under way. */
  stop(graceMs: number): Promise<void>;
}

/** A .NET TimeSpan as host.json writes it: `[d.]hh:mm:ss[.fffffff]`. */
function timeSpanMs(setting: string, value: unknown): number {
  const match = typeof value === 'string' ? /^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,7}))?$/.exec(value) : null;
  if (!match) throw new Error(`host.json extensions.queues.${setting} must be a time span such as "00:00:30", not ${JSON.stringify(value)}`);
  const [, days = '0', hours, minutes, seconds, fraction = '0'] = match;
  return (((Number(days) * 24 + Number(hours)) * 60 + Number(minutes)) * 60 + Number(seconds)) * 1000 + Math.round(Number(`0.${fraction}`) * 1000);
}

function positiveInteger(setting: string, value: unknown, max = Infinity): number {
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > max) {
    throw new Error(`host.json extensions.queues.${setting} must be an integer from 1${max < Infinity ? ` to ${max}` : ''}, not ${JSON.stringify(value)}`);
  }
  return value as number;
}

export function queueExtensionSettings(queues: Record<string, unknown> = {}): QueueExtensionSettings {
  const batchSize = queues.batchSize === undefined ? 16 : positiveInteger('batchSize', queues.batchSize, MAX_BATCH_SIZE);
  const maxPollingIntervalMs = queues.maxPollingInterval === undefined ? 60_000 : timeSpanMs('maxPollingInterval', queues.maxPollingInterval);
  if (maxPollingIntervalMs < MIN_POLLING_INTERVAL_MS) throw new Error('host.json extensions.queues.maxPollingInterval must be at least 00:00:00.1');
  const messageEncoding =
    typeof queues.messageEncoding === 'string' ? queues.messageEncoding.toLowerCase() : queues.messageEncoding === undefined ? 'base64' : '';
  if (messageEncoding !== 'base64' && messageEncoding !== 'none') {
    throw new Error(`host.json extensions.queues.messageEncoding must be "base64" or "none", not ${JSON.stringify(queues.messageEncoding)}`);
  }
  const newBatchThreshold = queues.newBatchThreshold === undefined ? Math.floor(batchSize / 2) : queues.newBatchThreshold;
  if (!Number.isInteger(newBatchThreshold) || (newBatchThreshold as number) < 0) {
    throw new Error(`host.json extensions.queues.newBatchThreshold must be an integer of at least 0, not ${JSON.stringify(newBatchThreshold)}`);
  }
  return {
    maxDequeueCount: queues.maxDequeueCount === undefined ? 5 : positiveInteger('maxDequeueCount', queues.maxDequeueCount),
    visibilityTimeoutMs: queues.visibilityTimeout === undefined ? 0 : timeSpanMs('visibilityTimeout', queues.visibilityTimeout),
    maxPollingIntervalMs,
    batchSize,
    newBatchThreshold: newBatchThreshold as number,
    messageEncoding,
  };
}

/** Azure lower-cases the resolved name, and refuses one the storage service would refuse. */
function queueName(expression: string, environment: QueueTriggersOptions['environment']): string {
  const name = resolveBindingExpression(expression, environment).toLowerCase();
  if (!QUEUE_NAME.test(name)) throw new Error(`"${name}" is not a valid queue name`);
  return name;
}

/**
 * The storage account behind a binding's `connection`: the app setting of that name holding a connection
 * string, or the identity-based `<connection>__queueServiceUri` (signed in as the developer or the app).
 */
function queueService(connection: string, environment: QueueTriggersOptions['environment']): QueueServiceClient {
  const connectionString = environment[connection]?.trim();
  if (connectionString) return QueueServiceClient.fromConnectionString(connectionString);
  const serviceUri = environment[`${connection}__queueServiceUri`]?.trim();
  if (serviceUri) return new QueueServiceClient(serviceUri, new DefaultAzureCredential());
  throw new Error(`neither ${connection} nor ${connection}__queueServiceUri is set`);
}

/** What the Node worker makes of a string message: its JSON value when it parses, else the string. */
function queueItem(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

interface QueueListenerOptions {
  name: string;
  trigger: Binding;
  handler: Registration['callback'];
  queue: QueueClient;
  poisonQueue: QueueClient;
  settings: QueueExtensionSettings;
  leaseSeconds: number;
  log: LogFunction;
}

/** Polls one queue for one function, as Azure's QueueListener does. */
class QueueListener {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly stopped: Promise<void>;
  private readonly polling: Promise<void>;

  constructor(private readonly options: QueueListenerOptions) {
    this.stopped = new Promise((resolve) => this.stopping.signal.addEventListener('abort', () => resolve(), { once: true }));
    this.polling = this.poll();
  }

  async stop(graceMs: number): Promise<void> {
    this.stopping.abort();
    // Once polling has ended no invocation is added, so the set is complete when it is awaited.
    const drained = this.polling.then(() => Promise.allSettled(this.inFlight)).then(() => true);
    if (!(await Promise.race([drained, sleep(graceMs, false, { ref: false })]))) {
      this.options.log(this.options.name, 'warning', `Stopping with ${this.inFlight.size} invocation(s) still running after ${graceMs} ms`);
    }
  }

  private async poll(): Promise<void> {
    const { queue, settings, log, name } = this.options;
    let delayMs = 0;
    let queueExists = false;
    let failing = false;
    while (!this.stopping.signal.aborted) {
      try {
        // Azure creates a missing queue rather than failing the listener.
        if (!queueExists) {
          await queue.createIfNotExists();
          queueExists = true;
        }
        const { receivedMessageItems } = await queue.receiveMessages({
          numberOfMessages: settings.batchSize,
          visibilityTimeout: this.options.leaseSeconds,
        });
        // Messages already received are handled even when stopping: otherwise they would stay invisible for minutes.
        for (const message of receivedMessageItems) this.track(this.handle(message));
        delayMs = receivedMessageItems.length ? 0 : Math.min(Math.max(delayMs * 2, MIN_POLLING_INTERVAL_MS), settings.maxPollingIntervalMs);
        if (failing) log(name, 'information', `Queue '${queue.name}' is reachable again`);
        failing = false;
      } catch (error) {
        if (!failing) log(name, 'warning', `Cannot poll queue '${queue.name}', retrying: ${error instanceof Error ? error.message : String(error)}`);
        failing = true;
        delayMs = settings.maxPollingIntervalMs;
      }
      await sleep(delayMs, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      while (this.inFlight.size > settings.newBatchThreshold && !this.stopping.signal.aborted) {
        await Promise.race([...this.inFlight, this.stopped]);
      }
    }
  }

  private track(invocation: Promise<void>): void {
    this.inFlight.add(invocation);
    void invocation.finally(() => this.inFlight.delete(invocation));
  }

  /** Runs the handler for one message and settles the message; never rejects. */
  private async handle(message: ReceivedMessageItem): Promise<void> {
    const { name, settings, log, queue } = this.options;
    const maxDequeueCountReached = `Message has reached MaxDequeueCount of ${settings.maxDequeueCount}.`;
    try {
      // A message seen this often without being settled (a host that crashed mid-invocation) is not retried again.
      if (message.dequeueCount > settings.maxDequeueCount) return await this.moveToPoison(message, maxDequeueCountReached);
      const text = this.decode(message.messageText);
      // Retrying cannot fix the encoding, so Azure moves such a message to the poison queue at once.
      if (text === undefined) return await this.moveToPoison(message, 'Message is not valid base64 (see host.json messageEncoding).');
      const context = this.context(message, text);
      const { invocationId } = context;
      const started = Date.now();
      const lease = this.keepLease(message);
      try {
        await this.options.handler(queueItem(text), context);
      } catch (error) {
        await lease.end();
        log(name, 'error', `Executed 'Functions.${name}' (Failed, Id=${invocationId}, Duration=${Date.now() - started}ms)\n${errorText(error)}`);
        if (message.dequeueCount >= settings.maxDequeueCount) return await this.moveToPoison(message, maxDequeueCountReached);
        await queue.updateMessage(message.messageId, message.popReceipt, undefined, Math.ceil(settings.visibilityTimeoutMs / 1000));
        return;
      }
      await lease.end();
      log(name, 'information', `Executed 'Functions.${name}' (Succeeded, Id=${invocationId}, Duration=${Date.now() - started}ms)`);
      await queue.deleteMessage(message.messageId, message.popReceipt);
    } catch (error) {
      // Settling failed (the queue is unreachable, or the message was taken again): it will be delivered again.
      log(name, 'warning', `Cannot settle message '${message.messageId}' on queue '${queue.name}': ${errorText(error)}`);
    }
  }

  /**
   * Keeps the message invisible while its handler runs. Each renewal gives the message a new pop
   * receipt, which `message` then carries; `end()` waits for a renewal under way, so the message is
   * settled with its latest receipt.
   */
  private keepLease(message: ReceivedMessageItem): { end(): Promise<void> } {
    const { queue, leaseSeconds, log, name } = this.options;
    let renewing = Promise.resolve();
    const timer = setInterval(
      () => {
        renewing = renewing.then(async () => {
          try {
            const { popReceipt, nextVisibleOn } = await queue.updateMessage(message.messageId, message.popReceipt, undefined, leaseSeconds);
            message.popReceipt = popReceipt!;
            message.nextVisibleOn = nextVisibleOn!;
          } catch (error) {
            log(name, 'warning', `Cannot renew the lease of message '${message.messageId}': ${errorText(error)}`);
          }
        });
      },
      (leaseSeconds * 1000) / 2,
    );
    timer.unref();
    return {
      end: () => {
        clearInterval(timer);
        return renewing;
      },
    };
  }

  private decode(messageText: string): string | undefined {
    if (this.options.settings.messageEncoding === 'none') return messageText;
    const base64 = messageText.replace(/\s/g, '');
    return STRICT_BASE64.test(base64) ? Buffer.from(base64, 'base64').toString('utf8') : undefined;
  }

  private context(message: ReceivedMessageItem, text: string) {
    const { name, trigger, log } = this.options;
    return invocationContext(name, trigger, log, {
      triggerMetadata: {
        id: message.messageId,
        queueTrigger: text,
        dequeueCount: message.dequeueCount,
        insertionTime: message.insertedOn.toISOString(),
        expirationTime: message.expiresOn.toISOString(),
        nextVisibleTime: message.nextVisibleOn.toISOString(),
        popReceipt: message.popReceipt,
      },
    });
  }

  /** Copies the message, encoded as it was, to the poison queue and removes the original. */
  private async moveToPoison(message: ReceivedMessageItem, reason: string): Promise<void> {
    const { name, log, queue, poisonQueue } = this.options;
    log(name, 'warning', `${reason} Moving message '${message.messageId}' to queue '${poisonQueue.name}'.`);
    await poisonQueue.createIfNotExists();
    await poisonQueue.sendMessage(message.messageText);
    await queue.deleteMessage(message.messageId, message.popReceipt);
  }
}

/** Starts a listener for every registration whose trigger is a storage queue. */
export function startQueueTriggers(options: QueueTriggersOptions): QueueTriggers {
  const { environment, log, settings } = options;
  const leaseSeconds = messageLeaseSeconds(environment);
  const listeners: QueueListener[] = [];
  const queueFunctions: QueueFunction[] = [];
  for (const registration of options.registrations) {
    const { metadata, callback } = registration;
    const trigger = triggerOf(registration, 'queueTrigger');
    if (!trigger) continue;
    try {
      const queue = queueName(trigger.queueName ?? '', environment);
      const service = queueService(trigger.connection || 'AzureWebJobsStorage', environment);
      listeners.push(
        new QueueListener({
          name: metadata.name,
          trigger,
          handler: callback,
          queue: service.getQueueClient(queue),
          poisonQueue: service.getQueueClient(`${queue}-poison`),
          settings,
          leaseSeconds,
          log,
        }),
      );
      queueFunctions.push({ name: metadata.name, queue });
    } catch (error) {
      // Azure's host keeps running the other functions and reports this one as in error.
      log(metadata.name, 'error', `The '${metadata.name}' function is in error: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return {
    functions: queueFunctions,
    stop: async (graceMs) => {
      await Promise.all(listeners.map((listener) => listener.stop(graceMs)));
    },
  };
}
