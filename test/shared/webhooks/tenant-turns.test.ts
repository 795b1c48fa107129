/** A tenant's turns in an instance (shared/webhooks/tenant-turns.ts): how many of its attempts may be under way at once, and what becomes of one more. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  QUICK_ATTEMPTS_PER_TENANT,
  SLOW_AFTER_MS,
  SLOW_ATTEMPTS_PER_TENANT,
  SLOW_REMEMBERED_MS,
  takeTurn,
  turnWaitSeconds,
  type TenantTurn,
} from '../../../shared/webhooks/tenant-turns.js';

/** The turns the tenant is given at once, without waiting, at `now`. */
async function turnsAtOnce(tenantId: string, now = Date.now()): Promise<TenantTurn[]> {
  const given: TenantTurn[] = [];
  for (let turn = await takeTurn(tenantId, { now, waitMs: 0 }); turn; turn = await takeTurn(tenantId, { now, waitMs: 0 })) given.push(turn);
  return given;
}

describe('takeTurn', () => {
  it('gives a tenant whose receivers answer quickly up to the quick bound at once, and each tenant its own', async () => {
    const [one, two] = [randomUUID(), randomUUID()];
    expect(await turnsAtOnce(one)).toHaveLength(QUICK_ATTEMPTS_PER_TENANT);
    expect(await turnsAtOnce(two)).toHaveLength(QUICK_ATTEMPTS_PER_TENANT);
  });

  it('has one more attempt of a quick tenant wait for a turn given back, first come first served, and none given twice', async () => {
    const tenantId = randomUUID();
    const turns = await turnsAtOnce(tenantId);
    const first = takeTurn(tenantId, { waitMs: 60_000 });
    const second = takeTurn(tenantId, { waitMs: 60_000 });
    turns[0]!.giveBack();
    turns[0]!.giveBack();
    const handedOver = await first;
    expect(handedOver).toBeDefined();
    turns[1]!.giveBack();
    expect(await second).toBeDefined();
    expect(await takeTurn(tenantId, { waitMs: 0 })).toBeUndefined();
  });

  it('sends one more attempt of a quick tenant back to the queue when no turn came back in time', async () => {
    const tenantId = randomUUID();
    await turnsAtOnce(tenantId);
    expect(await takeTurn(tenantId, { waitMs: 10 })).toBeUndefined();
  });

  it('gives a tenant no more than the slow bound once a receiver of its has kept an attempt waiting past the second, and has none wait', async () => {
    const start = Date.now();
    const tenantId = randomUUID();
    const hanging = (await takeTurn(tenantId, { now: start }))!;
    hanging.calling(start);
    const later = start + SLOW_AFTER_MS + 1;
    const more = await turnsAtOnce(tenantId, later);
    expect(more).toHaveLength(SLOW_ATTEMPTS_PER_TENANT - 1);
    expect(await takeTurn(tenantId, { now: later, waitMs: 60_000 })).toBeUndefined();
    // The slow attempt ends: the tenant stays slow for a while, though no attempt under way has called its receiver yet.
    hanging.giveBack(later);
    const last = await turnsAtOnce(tenantId, later);
    expect(last).toHaveLength(1);
    expect(await turnsAtOnce(tenantId, later + SLOW_REMEMBERED_MS - 1)).toHaveLength(0);
    // Then the quick bound is back.
    expect(await turnsAtOnce(tenantId, later + SLOW_REMEMBERED_MS)).toHaveLength(QUICK_ATTEMPTS_PER_TENANT - more.length - last.length);
  });

  it('stays slow after its last attempt under way ended slow, and then is quick again', async () => {
    const start = Date.now();
    const tenantId = randomUUID();
    const hanging = (await takeTurn(tenantId, { now: start }))!;
    hanging.calling(start);
    const ended = start + SLOW_AFTER_MS + 1;
    hanging.giveBack(ended);
    const slowTurns = await turnsAtOnce(tenantId, ended + SLOW_REMEMBERED_MS - 1);
    expect(slowTurns).toHaveLength(SLOW_ATTEMPTS_PER_TENANT);
    // Quick answers meanwhile do not make it quick again before its time.
    for (const turn of slowTurns) turn.giveBack(ended + 1);
    expect(await turnsAtOnce(tenantId, ended + SLOW_REMEMBERED_MS - 1)).toHaveLength(SLOW_ATTEMPTS_PER_TENANT);
  });

  it('counts an attempt that ended within the second as quick', async () => {
    const start = Date.now();
    const tenantId = randomUUID();
    const quick = (await takeTurn(tenantId, { now: start }))!;
    quick.calling(start);
    quick.giveBack(start + SLOW_AFTER_MS);
    expect(await turnsAtOnce(tenantId, start + SLOW_AFTER_MS)).toHaveLength(QUICK_ATTEMPTS_PER_TENANT);
  });

  it('counts a receiver slow only past the second, and only once it is called', async () => {
    const start = Date.now();
    const tenantId = randomUUID();
    (await takeTurn(tenantId, { now: start }))!.calling(start);
    await takeTurn(tenantId, { now: start - 60_000 });
    expect(await turnsAtOnce(tenantId, start + SLOW_AFTER_MS)).toHaveLength(QUICK_ATTEMPTS_PER_TENANT - 2);
  });

  it('sends the attempts waiting for a quick tenant’s turn back to the queue once it has turned slow', async () => {
    const tenantId = randomUUID();
    const turns = await turnsAtOnce(tenantId);
    const waiting = [takeTurn(tenantId, { waitMs: 60_000 }), takeTurn(tenantId, { waitMs: 60_000 })];
    turns[0]!.calling(Date.now() - SLOW_AFTER_MS - 1);
    turns[1]!.giveBack();
    expect(await Promise.all(waiting)).toEqual([undefined, undefined]);
  });
});

describe('turnWaitSeconds', () => {
  it('is 1 s the first time, twice as long each time after, and at most a minute', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map(turnWaitSeconds)).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
  });
});
