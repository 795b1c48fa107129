import type { InvocationContext } from '@azure/functions';
import { QueueServiceClient } from '@azure/storage-queue';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAzuriteQueue, type AzuriteQueue } from '../../../local/storage/azurite.js';
import type { Registration } from '../../../local/host/registrations.js';
import { pollingBackOff, queueExtensionSettings, startQueueTriggers, type QueueTriggers } from '../../../local/host/queue-triggers.js';
import { waitFor } from '../../support/wait.js';

// Like the test app's host.json would say: retries after 1 s, polls at least every 200 ms.
const FAST = { maxDequeueCount: 3, visibilityTimeout: '00:00:01', maxPollingInterval: '00:00:00.2' };

let azurite: AzuriteQueue;
let service: QueueServiceClient;
const running: QueueTriggers[] = [];
const logLines: string[] = [];

beforeAll(async () => {
  azurite = await startAzuriteQueue();
  service = QueueServiceClient.fromConnectionString(azurite.connectionString);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((triggers) => triggers.stop(5_000)));
  logLines.length = 0;
});

afterAll(async () => {
  await azurite?.close();
});

function uniqueQueue(label: string): string {
  return `${label}-${Math.random().toString(36).slice(2, 10)}`;
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

async function send(queue: string, messageText: string): Promise<void> {
  await service.getQueueClient(queue).createIfNotExists();
  await service.getQueueClient(queue).sendMessage(messageText);
}

/** Every message on the queue, visible or not (deleted ones are gone). */
async function messageCount(queue: string): Promise<number> {
  const { approximateMessagesCount } = await service.getQueueClient(queue).getProperties();
  return approximateMessagesCount ?? 0;
}

/** The first message on the queue, without taking it; undefined while the queue is empty or does not exist. */
async function peek(queue: string) {
  const queueClient = service.getQueueClient(queue);
  if (!(await queueClient.exists())) return undefined;
  return (await queueClient.peekMessages()).peekedMessageItems[0];
}

type Handler = (queueItem: unknown, context: InvocationContext) => unknown;

/** A registration as `app.storageQueue(name, { queueName, connection, handler })` makes it. */
function queueFunction(name: string, queueName: string, handler: Handler): Registration {
  return {
    metadata: {
      name,
      bindings: { queueTrigger1a2b3c: { name: 'queueTrigger1a2b3c', type: 'queueTrigger', direction: 'in', queueName, connection: 'TestStorage' } },
    },
    callback: handler as Registration['callback'],
  };
}

async function start(
  registrations: Registration[],
  options: { settings?: Record<string, unknown>; environment?: Record<string, string> } = {},
): Promise<QueueTriggers> {
  const triggers = await startQueueTriggers({
    registrations,
    settings: queueExtensionSettings({ ...FAST, ...options.settings }),
    environment: { TestStorage: azurite.connectionString, ...options.environment },
    log: (name, level, message) => logLines.push(`${level} ${name}: ${message}`),
  });
  running.push(triggers);
  return triggers;
}

interface Call {
  item: unknown;
  metadata: Record<string, unknown>;
  at: number;
}

/** A handler that records its calls and runs `behaviour` (which may throw) for each. */
function recorder(behaviour: (call: Call, index: number) => unknown = () => undefined) {
  const calls: Call[] = [];
  const handler: Handler = (item, context) => {
    const call = { item, metadata: context.triggerMetadata ?? {}, at: Date.now() };
    calls.push(call);
    return behaviour(call, calls.length - 1);
  };
  return { calls, handler };
}

describe('queue triggers in the local host', () => {
  it('delivers a base64 JSON message parsed, with the trigger metadata, and deletes it after success', async () => {
    const queue = uniqueQueue('jobs');
    const { calls, handler } = recorder();
    const triggers = await start([queueFunction('runJob', '%JOBS_QUEUE%', handler)], { environment: { JOBS_QUEUE: queue } });
    expect(triggers.functions).toEqual([{ name: 'runJob', queue }]);

    const text = JSON.stringify({ jobId: 'job-1', tenantId: 'tenant-1', title: 'テスト' });
    await send(queue, base64(text));
    await waitFor(() => calls.length === 1);

    expect(calls[0]!.item).toEqual({ jobId: 'job-1', tenantId: 'tenant-1', title: 'テスト' });
    expect(calls[0]!.metadata).toMatchObject({ queueTrigger: text, dequeueCount: 1, id: expect.any(String), popReceipt: expect.any(String) });
    for (const time of ['insertionTime', 'expirationTime', 'nextVisibleTime']) {
      expect(new Date(calls[0]!.metadata[time] as string).getTime()).not.toBeNaN();
    }
    await waitFor(async () => (await messageCount(queue)) === 0);
    expect(logLines.some((line) => line.includes("Executed 'Functions.runJob' (Succeeded"))).toBe(true);
  });

  it('retries a message whose handler threw after the visibility timeout, with dequeueCount 2', async () => {
    const queue = uniqueQueue('retry');
    const { calls, handler } = recorder((_, index) => {
      if (index === 0) throw new Error('first attempt fails');
    });
    await start([queueFunction('retried', queue, handler)]);

    await send(queue, base64('"once more"'));
    await waitFor(() => calls.length === 2);

    expect(calls.map((call) => call.metadata.dequeueCount)).toEqual([1, 2]);
    expect(calls[1]!.item).toBe('once more');
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(900);
    expect(logLines.some((line) => line.startsWith('error retried:') && line.includes('first attempt fails'))).toBe(true);
    await waitFor(async () => (await messageCount(queue)) === 0);
  });

  it('moves the message to <queue>-poison after maxDequeueCount failures', async () => {
    const queue = uniqueQueue('failing');
    const { calls, handler } = recorder(() => {
      throw new Error('always fails');
    });
    await start([queueFunction('failing', queue, handler)], { settings: { maxDequeueCount: 2 } });

    const messageText = base64('{"jobId":"job-2"}');
    await send(queue, messageText);
    const poisoned = await waitFor(() => peek(`${queue}-poison`));

    expect(poisoned.messageText).toBe(messageText);
    expect(calls.map((call) => call.metadata.dequeueCount)).toEqual([1, 2]);
    // The copy is sent before the original is deleted, as Azure does, so the delete may still be under way.
    await waitFor(async () => (await messageCount(queue)) === 0);
  });

  it('resolves %SETTING% in queue names, so a function can listen on the poison queue', async () => {
    const queue = uniqueQueue('rag');
    const failing = recorder(() => {
      throw new Error('give up');
    });
    const poison = recorder();
    const triggers = await start(
      [
        queueFunction('worker', '%RAG_QUEUE%', failing.handler),
        queueFunction('poisonWatcher', '%RAG_QUEUE%-poison', poison.handler),
        queueFunction('misconfigured', '%NOT_SET%', () => undefined),
      ],
      { settings: { maxDequeueCount: 1 }, environment: { RAG_QUEUE: queue } },
    );
    expect(triggers.functions).toEqual([
      { name: 'worker', queue },
      { name: 'poisonWatcher', queue: `${queue}-poison` },
    ]);
    expect(logLines).toContain("error misconfigured: The 'misconfigured' function is in error: '%NOT_SET%' does not resolve to a value");

    await send(queue, base64('{"jobId":"job-3","tenantId":"t"}'));
    await waitFor(() => poison.calls.length === 1);

    expect(failing.calls).toHaveLength(1);
    expect(poison.calls[0]!.item).toEqual({ jobId: 'job-3', tenantId: 't' });
    expect(poison.calls[0]!.metadata.dequeueCount).toBe(1);
  });

  it('delivers messages as they are with messageEncoding "none"', async () => {
    const queue = uniqueQueue('plain');
    const { calls, handler } = recorder();
    await start([queueFunction('plain', queue, handler)], { settings: { messageEncoding: 'none' } });

    await send(queue, 'plain text');
    await waitFor(() => calls.length === 1);
    await send(queue, '{"jobId":"job-4"}');
    await waitFor(() => calls.length === 2);

    expect(calls.map((call) => call.item)).toEqual(['plain text', { jobId: 'job-4' }]);
    expect(calls[0]!.metadata.queueTrigger).toBe('plain text');
  });

  it('moves a message that is not base64 to the poison queue at once, without running the handler', async () => {
    const queue = uniqueQueue('encoding');
    const { calls, handler } = recorder();
    await start([queueFunction('strict', queue, handler)]);

    await send(queue, '{"not":"base64"}');
    const poisoned = await waitFor(() => peek(`${queue}-poison`));

    expect(poisoned.messageText).toBe('{"not":"base64"}');
    expect(calls).toHaveLength(0);
    await waitFor(async () => (await messageCount(queue)) === 0);
  });

  it('handles a batch in parallel and fetches the next one at newBatchThreshold', async () => {
    const queue = uniqueQueue('batch');
    let running = 0;
    let mostAtOnce = 0;
    const { calls, handler } = recorder(async () => {
      mostAtOnce = Math.max(mostAtOnce, ++running);
      await new Promise((resolve) => setTimeout(resolve, 300));
      running--;
    });
    for (let index = 0; index < 5; index++) await send(queue, base64(String(index)));
    await start([queueFunction('batched', queue, handler)], { settings: { batchSize: 2, newBatchThreshold: 0 } });

    await waitFor(() => calls.length === 5);
    expect(mostAtOnce).toBe(2);
    expect(calls.map((call) => call.item).sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it('waits for the invocations under way when stopped', async () => {
    const queue = uniqueQueue('stop');
    let finished = false;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const { calls, handler } = recorder(async () => {
      await released;
      finished = true;
    });
    const triggers = await start([queueFunction('slow', queue, handler)]);

    await send(queue, base64('"slow"'));
    await waitFor(() => calls.length === 1);
    const finishedWhenStopped = triggers.stop(5_000).then(() => finished);
    // Let the stop get under way before the invocation may end.
    for (let turn = 0; turn < 20; turn++) await new Promise(setImmediate);
    release();

    expect(await finishedWhenStopped).toBe(true);
    expect(await messageCount(queue)).toBe(0);
  });

  it("reads host.json's extensions.queues with Azure's defaults", () => {
    expect(queueExtensionSettings()).toEqual({
      maxDequeueCount: 5,
      visibilityTimeoutMs: 0,
      maxPollingIntervalMs: 60_000,
      batchSize: 16,
      newBatchThreshold: 8,
      messageEncoding: 'base64',
    });
    expect(queueExtensionSettings({ visibilityTimeout: '1.02:03:04.5', maxPollingInterval: '00:00:02', batchSize: 4, messageEncoding: 'None' })).toMatchObject({
      visibilityTimeoutMs: ((26 * 60 + 3) * 60 + 4) * 1000 + 500,
      maxPollingIntervalMs: 2_000,
      newBatchThreshold: 2,
      messageEncoding: 'none',
    });
    // An app setting AzureFunctionsJobHost__extensions__queues__… overrides a value as a string.
    expect(queueExtensionSettings({ maxDequeueCount: '2', batchSize: '4', visibilityTimeout: '00:00:01' })).toMatchObject({
      maxDequeueCount: 2,
      batchSize: 4,
      newBatchThreshold: 2,
      visibilityTimeoutMs: 1_000,
    });
    expect(() => queueExtensionSettings({ batchSize: 64 })).toThrow(/batchSize/);
    expect(() => queueExtensionSettings({ maxDequeueCount: 'two' })).toThrow(/maxDequeueCount/);
    expect(() => queueExtensionSettings({ visibilityTimeout: 10 })).toThrow(/visibilityTimeout/);
    expect(() => queueExtensionSettings({ messageEncoding: 'utf8' })).toThrow(/messageEncoding/);
  });
});

describe("the wait between polls of an empty queue, as Azure's listener backs off", () => {
  const emptyPolls = (backOff: (found: boolean) => number, count: number) => Array.from({ length: count }, () => backOff(false));

  it('is 100 ms, then 100 ms more than 100 ms times 2^(n-1) after each empty poll, up to maxPollingInterval, where it stays', () => {
    expect(
      emptyPolls(
        pollingBackOff(1_000, () => 0.5),
        8,
      ),
    ).toEqual([100, 200, 300, 500, 900, 1_000, 1_000, 1_000]);
    expect(
      emptyPolls(
        pollingBackOff(250, () => 0.5),
        5,
      ),
    ).toEqual([100, 200, 250, 250, 250]);
  });

  it('strays up to a fifth either way at random', () => {
    expect(
      emptyPolls(
        pollingBackOff(60_000, () => 0),
        4,
      ),
    ).toEqual([100, 180, 260, 420]);
    expect(
      emptyPolls(
        pollingBackOff(60_000, () => 0.999_999),
        4,
      ).map(Math.round),
    ).toEqual([100, 220, 340, 580]);
  });

  it('is 100 ms again after a poll that found messages, and grows from there', () => {
    const backOff = pollingBackOff(60_000, () => 0.5);
    emptyPolls(backOff, 10);
    expect(backOff(true)).toBe(100);
    expect(emptyPolls(backOff, 3)).toEqual([200, 300, 500]);
  });
});
