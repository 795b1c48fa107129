/** A tenant's turns in an instance (shared/webhooks/tenant-turns.ts): how many of its attempts may be under way at once, and how long one over them waits. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { QUICK_ATTEMPTS_PER_TENANT, SLOW_AFTER_MS, SLOW_ATTEMPTS_PER_TENANT, takeTurn, turnWaitSeconds } from '../../shared/webhooks/tenant-turns.js';

/** Takes turns for the tenant at `now` until one is refused; answers those given. */
function turnsTaken(tenantId: string, now: number): (() => void)[] {
  const given: (() => void)[] = [];
  for (let turn = takeTurn(tenantId, now); turn; turn = takeTurn(tenantId, now)) given.push(turn);
  return given;
}

describe('takeTurn', () => {
  it('gives a tenant whose attempts are quick up to the quick bound, and each tenant its own', () => {
    const now = Date.now();
    const [one, two] = [randomUUID(), randomUUID()];
    const ofOne = turnsTaken(one, now);
    expect(ofOne).toHaveLength(QUICK_ATTEMPTS_PER_TENANT);
    expect(turnsTaken(two, now)).toHaveLength(QUICK_ATTEMPTS_PER_TENANT);
    // A turn given back is the next attempt's; giving it back twice frees one turn only.
    ofOne[0]!();
    ofOne[0]!();
    expect(turnsTaken(one, now)).toHaveLength(1);
  });

  it('gives no more than the slow bound while one of its attempts has run longer than a second', () => {
    const start = Date.now();
    const tenantId = randomUUID();
    const hanging = takeTurn(tenantId, start)!;
    const later = start + SLOW_AFTER_MS + 1;
    const more = turnsTaken(tenantId, later);
    expect(more).toHaveLength(SLOW_ATTEMPTS_PER_TENANT - 1);
    // The slow attempt ends: the others are quick so far, and the quick bound is back.
    hanging();
    expect(turnsTaken(tenantId, later)).toHaveLength(QUICK_ATTEMPTS_PER_TENANT - more.length);
  });

  it('counts an attempt slow only past the second', () => {
    const start = Date.now();
    const tenantId = randomUUID();
    takeTurn(tenantId, start);
    expect(turnsTaken(tenantId, start + SLOW_AFTER_MS)).toHaveLength(QUICK_ATTEMPTS_PER_TENANT - 1);
  });
});

describe('turnWaitSeconds', () => {
  it('is 1 s the first time, twice as long each time after, and at most a minute', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map(turnWaitSeconds)).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
  });
});
