import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { readBefore } from '../../../shared/lib/read-before.js';

/** A body read that never settles, as Node's fetch can leave one whose signal aborted after it began (nodejs/node#56917). */
const neverSettles = new Promise<string>(() => undefined);

describe('a body read before the deadline', () => {
  it("ends with the signal's reason when the deadline comes first, though the read never settles", async () => {
    const deadline = new AbortController();
    const reading = readBefore(deadline.signal, neverSettles);
    const reason = new DOMException('The operation timed out.', 'TimeoutError');
    deadline.abort(reason);
    await expect(reading).rejects.toBe(reason);
  });

  it('gives the body when it comes first, and leaves no listener on the signal', async () => {
    const deadline = new AbortController();
    expect(await readBefore(deadline.signal, Promise.resolve('body'))).toBe('body');
    expect(getEventListeners(deadline.signal, 'abort')).toEqual([]);
  });

  it('passes on the read’s own failure, and ends at once past the deadline', async () => {
    const failure = new TypeError('terminated');
    await expect(readBefore(new AbortController().signal, Promise.reject(failure))).rejects.toBe(failure);
    await expect(readBefore(AbortSignal.abort(), neverSettles)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('leaves no unhandled rejection when the read fails after the deadline won', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      let failLater!: (error: Error) => void;
      const read = new Promise<string>((_, reject) => (failLater = reject));
      const deadline = new AbortController();
      const reading = readBefore(deadline.signal, read);
      deadline.abort();
      await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
      failLater(new TypeError('terminated'));
      // Unhandled rejections are reported after the microtasks of the turn: one macrotask later they would be here.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', record);
    }
  });
});
