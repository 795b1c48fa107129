/** The one failure policy of the queue-triggered functions for a message that does not fit their queue. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ragIndexPoison } from '../../../functions/rag-index-poison.js';
import { ragIndexWorker } from '../../../functions/rag-index-worker.js';
import { webhooksDeliver } from '../../../functions/webhooks-deliver.js';
import { queueWork } from '../../../shared/background/queue-work.js';
import { loggedInvocation } from '../../support/logged-invocation.js';

describe('queue work', () => {
  it('hands a message that fits the schema to the work, parsed', async () => {
    const handled: unknown[] = [];
    const handler = queueWork(z.object({ jobId: z.string() }), 'test message', async (work) => void handled.push(work));
    const { invocation, lines } = loggedInvocation('queue-1', 'test-worker');
    await handler({ jobId: 'J-1', extra: true }, invocation);
    expect(handled).toEqual([{ jobId: 'J-1' }]);
    expect(lines).toEqual([]);
  });

  it('gives what the work throws back to the host, which retries the message', async () => {
    const handler = queueWork(z.object({ jobId: z.string() }), 'test message', () => Promise.reject(new Error('database away')));
    await expect(handler({ jobId: 'J-1' }, loggedInvocation('queue-2').invocation)).rejects.toThrow('database away');
  });

  it.each([
    ['rag-index-worker', ragIndexWorker, 'Dropping a RAG queue message that is not a job, a batch or a finishing'],
    ['rag-index-poison', ragIndexPoison, 'Dropping a poisoned RAG queue message that is not a job, a batch or a finishing'],
    ['webhooks-deliver', webhooksDeliver, 'Dropping a webhooks queue message that is not a delivery attempt'],
  ])('drops a message %s can never do, with a warning, instead of failing until it is poisoned', async (name, handler, warning) => {
    for (const message of ['not json work', { tenantId: 't' }, null]) {
      const { invocation, lines } = loggedInvocation('queue-3', name);
      await expect(handler(message, invocation)).resolves.toBeUndefined();
      expect(lines).toEqual([{ level: 'warning', text: warning }]);
    }
  });
});
