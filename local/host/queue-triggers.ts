/**
 * Storage queue triggers the way Azure's Functions host runs them (docs/local-stack.md): each queue polled with
 * Azure's randomized exponential back-off, batches, leases renewed at half time, retries after `visibilityTimeout`,
 * the poison queue.
 */
import { once } from 'node:events';
import { QueueServiceClient, type QueueClient, type ReceivedMessageItem } from '@azure/storage-queue';
import { z } from 'zod';
import { SETTINGS } from '../../shared/settings/catalog.js';
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
  type LogFunction,
  type Registration,
  type TriggerHost,
  type Triggers,
} from './registrations.js';

/** How long a message stays invisible while its function runs, as Azure's listener keeps it; LOCAL_QUEUE_MESSAGE_LEASE shortens it, for tests. */
const DEFAULT_MESSAGE_LEASE_SECONDS = Number(SETTINGS.LOCAL_QUEUE_MESSAGE_LEASE.default);
/** Azure's shortest polling interval (QueuePollingIntervals.Minimum): the back-off starts here, and grows by it. */
const MIN_POLLING_INTERVAL_MS = 100;
/** How far Azure's back-off strays from doubling either way, at random, so that idle listeners do not poll in step. */
const RANDOMIZATION_FACTOR = 0.2;
// Azure's queue name rules: 3-63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit.
const QUEUE_NAME = /^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
/** A .NET TimeSpan as host.json writes it: `[d.]hh:mm:ss[.fffffff]`. */
const TIME_SPAN = /^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d{1,7})?)$/;

function milliseconds(timeSpan: string): number {
  const [, days = 0, hours, minutes, seconds] = TIME_SPAN.exec(timeSpan)!;
  return Math.round((((Number(days) * 24 + Number(hours)) * 60 + Number(minutes)) * 60 + Number(seconds)) * 1000);
}
const timeSpanMs = z.string().regex(TIME_SPAN, 'must be a time span such as "00:00:30"').transform(milliseconds);
const ENCODINGS = z.enum(['base64', 'none']);
const BASE64 = z.base64();
const MESSAGE_LEASE_SECONDS = z.coerce.number().int().min(2).max(DEFAULT_MESSAGE_LEASE_SECONDS).default(DEFAULT_MESSAGE_LEASE_SECONDS);

/** host.json's `extensions.queues`, with Azure's defaults. */
const QUEUE_SETTINGS = z
  .object({
    maxDequeueCount: z.coerce.number().int().min(1).default(5),
    visibilityTimeout: timeSpanMs.default(0),
    maxPollingInterval: timeSpanMs.refine((ms) => ms >= MIN_POLLING_INTERVAL_MS, 'must be at least 00:00:00.1').default(60_000),
    // The storage service hands out at most 32 messages per request.
    batchSize: z.coerce.number().int().min(1).max(32).default(16),
    newBatchThreshold: z.coerce.number().int().min(0).optional(),
    messageEncoding: z.string().toLowerCase().pipe(ENCODINGS).default('base64'),
  })
  .transform(({ visibilityTimeout, maxPollingInterval, newBatchThreshold, ...settings }) => ({
    ...settings,
    /** The delay before the message of a failed invocation is visible again. */
    visibilityTimeoutMs: visibilityTimeout,
    maxPollingIntervalMs: maxPollingInterval,
    /** A new batch is fetched once no more than this many messages are still being handled. */
    newBatchThreshold: newBatchThreshold ?? Math.floor(settings.batchSize / 2),
  }));

export type QueueExtensionSettings = z.output<typeof QUEUE_SETTINGS>;

export const queueExtensionSettings = (queues: Record<string, unknown> = {}): QueueExtensionSettings =>
  parsed(QUEUE_SETTINGS, queues, 'host.json extensions.queues');

export type QueueTriggers = Triggers<{ name: string; queue: string }>;

/** The storage account behind a binding's `connection`. */
function queueService(connection: string, environment: Environment): QueueServiceClient {
  const setting = connectionSetting(connection, 'queueServiceUri', environment);
  return 'uri' in setting ? new QueueServiceClient(setting.uri, setting.credential) : QueueServiceClient.fromConnectionString(setting.connectionString);
}

/** What the Node worker makes of a string message: its JSON value when it parses, else the string. */
function queueItem(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function base64Decoded(messageText: string): string | undefined {
  const base64 = messageText.replace(/\s/g, '');
  return BASE64.safeParse(base64).success ? Buffer.from(base64, 'base64').toString('utf8') : undefined;
}

interface Listener {
  name: string;
  trigger: Binding;
  handler: Registration['callback'];
  queue: QueueClient;
  poisonQueue: QueueClient;
  settings: QueueExtensionSettings;
  leaseSeconds: number;
  log: LogFunction;
}

/**
 * The waits between polls of an empty queue, as Azure's RandomizedExponentialBackoffStrategy gives them: the
 * first empty poll after messages were found waits the minimum (100 ms); each empty poll after that waits
 * the minimum plus 100 ms times 2^(n-1), give or take a fifth at random, until the wait reaches
 * `maxPollingInterval`, where it stays. `random` is Math.random's kind, for a test to fix.
 */
export function pollingBackOff(maxPollingIntervalMs: number, random: () => number = Math.random): (foundMessagesSinceLastWait: boolean) => number {
  let current = 0;
  let exponent = 0;
  return (foundMessagesSinceLastWait) => {
    if (foundMessagesSinceLastWait) {
      current = MIN_POLLING_INTERVAL_MS;
      exponent = 1;
    } else if (current !== maxPollingIntervalMs) {
      const factor = 1 - RANDOMIZATION_FACTOR + random() * 2 * RANDOMIZATION_FACTOR;
      const next = MIN_POLLING_INTERVAL_MS + (exponent > 0 ? factor * 2 ** (exponent - 1) * MIN_POLLING_INTERVAL_MS : 0);
      if (next < maxPollingIntervalMs) {
        current = next;
        exponent++;
      } else current = maxPollingIntervalMs;
    }
    return current;
  };
}

/**
 * Polls one queue for one function, as Azure's QueueListener does: after a poll that found messages the next
 * one comes as soon as no more than `newBatchThreshold` are being handled; after an empty or failed poll, after
 * the back-off's wait. The function it returns stops it, resolving once its invocations are done.
 */
function listen(listener: Listener): () => Promise<void> {
  const { name, queue, settings, log } = listener;
  const inFlight = new Set<Promise<void>>();
  const stopping = new AbortController();
  const stopped = once(stopping.signal, 'abort');
  const poll = async () => {
    const backOff = pollingBackOff(settings.maxPollingIntervalMs);
    let foundMessagesSinceLastWait = false;
    let queueExists = false;
    let failing = false;
    while (!stopping.signal.aborted) {
      let found = false;
      try {
        // Azure creates a missing queue rather than failing the listener.
        if (!queueExists) await queue.createIfNotExists();
        queueExists = true;
        const { receivedMessageItems } = await queue.receiveMessages({ numberOfMessages: settings.batchSize, visibilityTimeout: listener.leaseSeconds });
        // Messages already received are handled even when stopping: otherwise they would stay invisible for minutes.
        for (const message of receivedMessageItems) {
          const invocation = handle(listener, message);
          inFlight.add(invocation);
          void invocation.finally(() => inFlight.delete(invocation));
        }
        found = receivedMessageItems.length > 0;
        if (failing) log(name, 'information', `Queue '${queue.name}' is reachable again`);
        failing = false;
      } catch (error) {
        if (!failing) log(name, 'warning', `Cannot poll queue '${queue.name}', retrying: ${errorMessage(error)}`);
        failing = true;
        queueExists = false;
      }
      if (found) {
        foundMessagesSinceLastWait = true;
        while (inFlight.size > settings.newBatchThreshold && !stopping.signal.aborted) await Promise.race([...inFlight, stopped]);
      } else {
        await pause(backOff(foundMessagesSinceLastWait), stopping.signal);
        foundMessagesSinceLastWait = false;
      }
    }
  };
  const polling = poll();
  return async () => {
    stopping.abort();
    // Once polling has ended no invocation is added, so the set is complete when it is awaited.
    await polling;
    await Promise.allSettled(inFlight);
  };
}

/** Runs the function for one message and settles the message; never rejects. */
async function handle(listener: Listener, message: ReceivedMessageItem): Promise<void> {
  const { name, trigger, handler, queue, settings, log } = listener;
  const maxDequeueCountReached = `Message has reached MaxDequeueCount of ${settings.maxDequeueCount}.`;
  try {
    // A message seen this often without being settled (a host that crashed mid-invocation) is not retried again.
    if (message.dequeueCount > settings.maxDequeueCount) return await moveToPoison(listener, message, maxDequeueCountReached);
    const text = settings.messageEncoding === 'none' ? message.messageText : base64Decoded(message.messageText);
    // Retrying cannot fix the encoding, so Azure moves such a message to the poison queue at once.
    if (text === undefined) return await moveToPoison(listener, message, 'Message is not valid base64 (see host.json messageEncoding).');
    const context = invocationContext(name, trigger, log, {
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
    const endLease = keepLease(listener, message);
    const succeeded = await invoke(context, () => handler(queueItem(text), context));
    await endLease();
    if (succeeded) await queue.deleteMessage(message.messageId, message.popReceipt);
    else if (message.dequeueCount >= settings.maxDequeueCount) await moveToPoison(listener, message, maxDequeueCountReached);
    else await queue.updateMessage(message.messageId, message.popReceipt, undefined, Math.ceil(settings.visibilityTimeoutMs / 1000));
  } catch (error) {
    // Settling failed (the queue is unreachable, or the message was taken again): it will be delivered again.
    log(name, 'warning', `Cannot settle message '${message.messageId}' on queue '${queue.name}': ${errorMessage(error)}`);
  }
}

/**
 * Keeps the message invisible while its function runs, renewed at half time. Each renewal gives the message a new pop
 * receipt: the function returned ends it once a renewal under way is done, so that the message is settled with its latest.
 */
function keepLease({ name, queue, leaseSeconds, log }: Listener, message: ReceivedMessageItem): () => Promise<void> {
  const ended = new AbortController();
  const renewing = (async () => {
    while (await pause((leaseSeconds * 1000) / 2, ended.signal)) {
      try {
        const { popReceipt, nextVisibleOn } = await queue.updateMessage(message.messageId, message.popReceipt, undefined, leaseSeconds);
        Object.assign(message, { popReceipt, nextVisibleOn });
      } catch (error) {
        log(name, 'warning', `Cannot renew the lease of message '${message.messageId}': ${errorMessage(error)}`);
      }
    }
  })();
  return () => {
    ended.abort();
    return renewing;
  };
}

/** Copies the message, encoded as it was, to the poison queue and removes the original. */
async function moveToPoison({ name, log, queue, poisonQueue }: Listener, message: ReceivedMessageItem, reason: string): Promise<void> {
  log(name, 'warning', `${reason} Moving message '${message.messageId}' to queue '${poisonQueue.name}'.`);
  await poisonQueue.createIfNotExists();
  await poisonQueue.sendMessage(message.messageText);
  await queue.deleteMessage(message.messageId, message.popReceipt);
}

/** Starts a listener for every function whose trigger is a storage queue. */
export function startQueueTriggers(host: TriggerHost & { settings: QueueExtensionSettings }): Promise<QueueTriggers> {
  const { environment, settings, log } = host;
  const leaseSeconds = parsed(MESSAGE_LEASE_SECONDS, environment.LOCAL_QUEUE_MESSAGE_LEASE || undefined, 'LOCAL_QUEUE_MESSAGE_LEASE (seconds)');
  return startTriggers(host, 'queueTrigger', ({ metadata: { name }, callback: handler }, trigger) => {
    // Azure lower-cases the resolved name, and refuses one the storage service would refuse.
    const queue = resolveBindingExpression(trigger.queueName ?? '', environment).toLowerCase();
    if (!QUEUE_NAME.test(queue)) throw new Error(`"${queue}" is not a valid queue name`);
    const service = queueService(trigger.connection || 'AzureWebJobsStorage', environment);
    const listener = { name, trigger, handler, settings, leaseSeconds, log };
    const stop = listen({ ...listener, queue: service.getQueueClient(queue), poisonQueue: service.getQueueClient(`${queue}-poison`) });
    return { info: { name, queue }, stop };
  });
}
