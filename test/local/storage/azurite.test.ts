import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueueServiceClient } from '@azure/storage-queue';
import { describe, expect, it } from 'vitest';
import { startAzuriteQueue } from '../../../local/storage/azurite.js';

describe('Azurite with a data folder', () => {
  it("is in a process group of its own: a terminal's Ctrl+C reaches the stack, which closes it after the host has settled its messages", async () => {
    const processGroup = async (pid: number) => (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ')[2];
    const own = await startAzuriteQueue();
    try {
      expect(await processGroup(own.pid)).not.toBe(await processGroup(process.pid));
    } finally {
      await own.close();
    }
  });

  it('keeps through a crash every change it answered: messages sent, deleted and received (still invisible) stay so', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'azurite-crash-'));
    try {
      const crashing = await startAzuriteQueue({ dataDir: folder });
      const queue = QueueServiceClient.fromConnectionString(crashing.connectionString).getQueueClient('crash');
      await queue.create();
      for (const text of ['first', 'second', 'third']) await queue.sendMessage(text);
      const [taken] = (await queue.receiveMessages()).receivedMessageItems;
      await queue.deleteMessage(taken!.messageId, taken!.popReceipt);
      await queue.receiveMessages({ visibilityTimeout: 60 });
      // At once, as a crash comes: Azure Storage answers a change once it is kept, and so must the local stack's queue.
      process.kill(crashing.pid, 'SIGKILL');
      await crashing.close();
      const restarted = await startAzuriteQueue({ dataDir: folder });
      try {
        const again = QueueServiceClient.fromConnectionString(restarted.connectionString).getQueueClient('crash');
        expect((await again.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((message) => message.messageText)).toEqual(['third']);
        expect((await again.getProperties()).approximateMessagesCount).toBe(2);
      } finally {
        await restarted.close();
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
