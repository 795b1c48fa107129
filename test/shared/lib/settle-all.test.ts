/** settleAll (shared/lib/settle-all.ts): Promise.all's answer, given only once every promise has settled. */
import { describe, expect, it } from 'vitest';
import { settleAll } from '../../../shared/lib/settle-all.js';

describe('settleAll', () => {
  it("gives every promise's value, in order", async () => {
    expect(await settleAll([Promise.resolve(1), Promise.resolve('two'), undefined])).toEqual([1, 'two', undefined]);
  });

  it('fails with the first failure only once the others have settled: none is left running', async () => {
    const log: string[] = [];
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve)).then(() => void log.push('slow settled'));
    const failing = Promise.reject(new Error('first'));
    const settled = settleAll([slow, failing, Promise.reject(new Error('second'))]).catch((error: Error) => void log.push(`failed: ${error.message}`));
    // After every pending reaction has run: Promise.all would have failed by now.
    setImmediate(release);
    await settled;
    expect(log).toEqual(['slow settled', 'failed: first']);
  });
});
