import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueueServiceClient } from '@azure/storage-queue';
import { describe, expect, it } from 'vitest';
import { startStack } from '../../local/stack.js';
import { stack, stackAppSettings, token } from '../support/stack.js';
import { waitFor } from '../support/wait.js';

const alive = (pid: number) => {
  try {
    return process.kill(pid, 0);
  } catch {
    return false;
  }
};

describe('the local stack', () => {
  it('has an Azurite queue service the tests can reach', async () => {
    const queue = QueueServiceClient.fromConnectionString(stack.storageConnectionString).getQueueClient(`stack-${crypto.randomUUID().slice(0, 8)}`);
    const message = Buffer.from('"hello"').toString('base64');
    await queue.create();
    await queue.sendMessage(message);
    const { peekedMessageItems } = await queue.peekMessages();
    expect(peekedMessageItems[0]?.messageText).toBe(message);
    await queue.delete();
  });

  it(
    'starts the Functions host again on its port when it dies (a crash, an out-of-memory kill), as Azure starts its worker again',
    { timeout: 90_000 },
    async () => {
      const lines: string[] = [];
      const settings = { ...stackAppSettings, AzureWebJobsStorage: stack.storageConnectionString, NODE_EXTRA_CA_CERTS: stack.caCertPath };
      const own = await startStack({ apiPort: 0, identityProviderPort: 0, settings, hostOutput: (line) => lines.push(line) });
      try {
        const killed = own.hostPid;
        process.kill(killed, 'SIGKILL');
        await waitFor(() => own.hostPid !== killed && alive(own.hostPid), 30_000);
        await waitFor(async () => (await fetch(`${own.apiBaseUrl}/openapi.json`).catch(() => undefined))?.status === 200, 30_000);
      } finally {
        await own.stop();
      }
      expect(alive(own.hostPid)).toBe(false);
    },
  );

  it('uses the database npm start names (lms) of an account that is given without COSMOS_DATABASE, and holds its data folder while it runs', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'lms-stack-'));
    const { COSMOS_DATABASE, ...settings } = { ...stackAppSettings, AzureWebJobsStorage: stack.storageConnectionString, NODE_EXTRA_CA_CERTS: stack.caCertPath };
    try {
      const own = await startStack({ apiPort: 0, identityProviderPort: 0, dataDir, settings });
      try {
        expect(own.environment.COSMOS_DATABASE).toBe(COSMOS_DATABASE);
        const listed = await fetch(`${own.apiBaseUrl}/projects?limit=1`, { headers: { authorization: `Bearer ${await token({ roles: ['LMS.Reader'] })}` } });
        expect(listed.status).toBe(200);
        // What `npm start` reads to tell that another stack uses the folder.
        expect(JSON.parse(await readFile(join(dataDir, 'stack.json'), 'utf8'))).toMatchObject({ pid: process.pid, apiPort: 0 });
      } finally {
        await own.stop();
      }
      expect(existsSync(join(dataDir, 'stack.json'))).toBe(false);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
