/** Queue triggers of an app in the local Functions host process: listed as ready, run, and left out when switched off. */
import { appendFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { QueueServiceClient } from '@azure/storage-queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAzuriteQueue, type AzuriteQueue } from '../../../local/storage/azurite.js';
import { startHostProcess } from '../../../local/stack.js';
import { waitFor } from '../../support/wait.js';

// Like the test app's host.json would say: retries after 1 s, polls at least every 200 ms.
const FAST = { maxDequeueCount: 3, visibilityTimeout: '00:00:01', maxPollingInterval: '00:00:00.2' };

let azurite: AzuriteQueue;
let service: QueueServiceClient;

beforeAll(async () => {
  azurite = await startAzuriteQueue();
  service = QueueServiceClient.fromConnectionString(azurite.connectionString);
});
afterAll(async () => {
  await azurite?.close();
});

const uniqueQueue = (label: string): string => `${label}-${Math.random().toString(36).slice(2, 10)}`;

describe('queue triggers of an app in the local Functions host process', () => {
  let appDir: string;

  beforeAll(async () => {
    appDir = await mkdtemp(join(tmpdir(), 'lms-queue-app-'));
    // The app lives outside this repository, so it imports @azure/functions by path: the same module the host loads.
    const functionsUrl = pathToFileURL(createRequire(import.meta.url).resolve('@azure/functions')).href;
    await writeFile(join(appDir, 'package.json'), JSON.stringify({ type: 'module', main: 'functions/*.js' }));
    await writeFile(join(appDir, 'host.json'), JSON.stringify({ version: '2.0', extensions: { queues: FAST } }));
    await mkdir(join(appDir, 'functions'));
    await writeFile(
      join(appDir, 'functions', 'record.js'),
      `import { appendFileSync } from 'node:fs';
import { app } from '${functionsUrl}';
app.storageQueue('recordJob', {
  queueName: '%JOBS_QUEUE%',
  connection: 'AzureWebJobsStorage',
  handler: (item, context) => appendFileSync(process.env.RECORD_FILE, JSON.stringify({ item, metadata: context.triggerMetadata }) + '\\n'),
});
app.http('ping', { handler: () => ({ body: 'pong' }) });
`,
    );
  });

  afterAll(async () => {
    await rm(appDir, { recursive: true, force: true });
  });

  it('runs app.storageQueue handlers and lists them in the ready message', async () => {
    const queue = uniqueQueue('hosted');
    const recordFile = join(appDir, 'calls.jsonl');
    appendFileSync(recordFile, '');
    const hostLog: string[] = [];
    const host = await startHostProcess({
      appRoot: appDir,
      port: 0,
      environment: { AzureWebJobsStorage: azurite.connectionString, JOBS_QUEUE: queue, RECORD_FILE: recordFile },
      hostOutput: (line) => hostLog.push(line),
    });
    try {
      expect(host.queueFunctions).toEqual([{ name: 'recordJob', queue }]);
      expect(host.routes.map((route) => route.name)).toEqual(['ping']);

      await service.getQueueClient(queue).createIfNotExists();
      await service.getQueueClient(queue).sendMessage(Buffer.from('{"jobId":"job-5","tenantId":"t"}').toString('base64'));
      const line = await waitFor(async () => (await readFile(recordFile, 'utf8')).trim());
      expect(JSON.parse(line)).toMatchObject({ item: { jobId: 'job-5', tenantId: 't' }, metadata: { dequeueCount: 1 } });
      await waitFor(async () => (await service.getQueueClient(queue).getProperties()).approximateMessagesCount === 0);
    } finally {
      await host.stop();
    }
    expect(hostLog.some((entry) => entry.includes("Executed 'Functions.recordJob' (Succeeded"))).toBe(true);
  });

  it('leaves out a function switched off by the app setting AzureWebJobs.<name>.Disabled, its name in any case', async () => {
    const environment = { AzureWebJobsStorage: azurite.connectionString, JOBS_QUEUE: uniqueQueue('off'), 'azurewebjobs.RECORDJOB.disabled': ' True ' };
    const host = await startHostProcess({ appRoot: appDir, port: 0, environment });
    try {
      expect(host.queueFunctions).toEqual([]);
      expect(host.routes.map((route) => route.name)).toEqual(['ping']);
    } finally {
      await host.stop();
    }
  });
});
