/**
 * The per-tenant sequences that make the readable ids (shared/data/sequence.ts), in process, against
 * the embedded Cosmos store of the local stack started by this file, through a proxy
 * (test/support/cosmos-proxy.ts) that sees each reservation and can fail or hold one. Another
 * instance of the app is another copy of the module (vi.resetModules), with blocks of its own.
 * A watched container (the real one, counting its reservations under way) shows that none is left
 * running when a number is handed out: an instance may be frozen once the create has answered.
 */
import { randomUUID } from 'node:crypto';
import type { Container } from '@azure/cosmos';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { container } from '../../../shared/data/cosmos.js';
import { nextInSequence } from '../../../shared/data/sequence.js';
import { type CosmosRequestRecord, STORE_FAILURE } from '../../support/cosmos-proxy.js';
import { embeddedStoreForTests } from '../../support/embedded-store.js';
import { gate } from '../../support/wait.js';

const embedded = embeddedStoreForTests();
let documents: Container;

beforeAll(async () => {
  documents = await container('tenantData');
});

type Next = typeof nextInSequence;

/** Another instance of the app: a fresh copy of the module, which knows none of this one's blocks. */
async function anotherInstance(): Promise<Next> {
  vi.resetModules();
  return (await import('../../../shared/data/sequence.js')).nextInSequence;
}

/** A sequence of its own in a tenant of its own. */
function newSequence() {
  return { tenantId: randomUUID(), name: `notes-${randomUUID()}` };
}

/** `count` numbers taken one after another. */
async function take(next: Next, { tenantId, name }: { tenantId: string; name: string }, count: number): Promise<number[]> {
  const numbers: number[] = [];
  for (let index = 0; index < count; index++) numbers.push(await next(documents, tenantId, name));
  return numbers;
}

/**
 * The real container, counting the reservations (an item's patch, a create) under way: started and not
 * yet answered, or failed, to the caller. Nothing else is changed.
 */
function watched(real: Container): { container: Container; underWay: () => number } {
  let underWay = 0;
  const counted = <O extends object>(target: O, method: string): O =>
    new Proxy(target, {
      get(object, property) {
        const value = Reflect.get(object, property) as unknown;
        if (property !== method || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          underWay++;
          return (value as (...args: unknown[]) => Promise<unknown>).apply(object, args).finally(() => underWay--);
        };
      },
    });
  const container = new Proxy(real, {
    get(object, property) {
      if (property === 'item') return (...args: Parameters<Container['item']>) => counted(object.item(...args), 'patch');
      if (property === 'items') return counted(object.items, 'create');
      return Reflect.get(object, property) as unknown;
    },
  });
  return { container, underWay: () => underWay };
}

const from = (first: number, count: number) => Array.from({ length: count }, (_, index) => first + index);

/** The sequence's document as stored, read past the proxy. */
async function stored({ tenantId, name }: { tenantId: string; name: string }) {
  const { resource } = await embedded.direct().item(`sequence-${name}`, tenantId).read<{ type: string; value: number }>();
  return resource;
}

/** The requests that reserved numbers of the sequence: its create (POST) and its increments (PATCH). */
const reservationsOf = (name: string) => embedded.store.requests.filter((record) => isCreateOf(name)(record) || isIncrementOf(name)(record));
const isCreateOf = (name: string) => (record: CosmosRequestRecord) => record.method === 'POST' && record.body.includes(`"sequence-${name}"`);
const isIncrementOf = (name: string) => (record: CosmosRequestRecord) => record.method === 'PATCH' && record.path.endsWith(`/docs/sequence-${name}`);

describe('a sequence', () => {
  it('starts at 1001 and goes up by one, block after block, with no gap within one instance, reserving a block at a time', async () => {
    const sequence = newSequence();
    expect(await take(nextInSequence, sequence, 60)).toEqual(from(1001, 60));
    // Kept in the tenant's partition as a document of its own type: three blocks, and none reserved ahead.
    expect(await stored(sequence)).toMatchObject({ type: 'sequence', value: 1060 });
    // The first block by creating the document (after an increment found none), then one increment per block of 20.
    expect(reservationsOf(sequence.name).map((record) => record.method)).toEqual(['PATCH', 'POST', 'PATCH', 'PATCH']);
  });

  it('counts for its own tenant and name', async () => {
    const tenantId = randomUUID();
    const tasks = { tenantId, name: `tasks-${randomUUID()}` };
    const projects = { tenantId, name: `projects-${randomUUID()}` };
    expect(await take(nextInSequence, tasks, 3)).toEqual([1001, 1002, 1003]);
    expect(await take(nextInSequence, projects, 2)).toEqual([1001, 1002]);
    expect(await take(nextInSequence, { ...tasks, tenantId: randomUUID() }, 1)).toEqual([1001]);
    expect(await take(nextInSequence, tasks, 1)).toEqual([1004]);
  });

  it('hands concurrent callers in one instance one reservation, in the order they asked: no number twice, none skipped', async () => {
    const sequence = newSequence();
    const numbers = await Promise.all(from(0, 30).map(() => nextInSequence(documents, sequence.tenantId, sequence.name)));
    expect(numbers).toEqual(from(1001, 30));
    expect(await stored(sequence)).toMatchObject({ value: 1040 });
    expect(reservationsOf(sequence.name).map((record) => record.method)).toEqual(['PATCH', 'POST', 'PATCH']);
  });

  it('leaves no reservation under way when it hands out a number or fails: nothing runs after the create answers', async () => {
    const sequence = newSequence();
    const { container, underWay } = watched(documents);
    const next = () => nextInSequence(container, sequence.tenantId, sequence.name);
    // One after another, past the middle and the end of each block.
    for (let index = 0; index < 45; index++) {
      await next();
      expect(underWay()).toBe(0);
    }
    // Many at once, across the end of the third block: the numbers of the current block need no wait, the
    // others wait for one reservation; once they all have their numbers, nothing is under way.
    await Promise.all(from(0, 30).map(() => next()));
    expect(underWay()).toBe(0);
    expect(reservationsOf(sequence.name).map((record) => record.method)).toEqual(['PATCH', 'POST', 'PATCH', 'PATCH', 'PATCH']);
    // And when the store fails the reservations: the rest of the block, then failures once the reservation and the one more try
    // of the calls that waited for it failed.
    embedded.store.intercept = (record) => (isIncrementOf(sequence.name)(record) ? STORE_FAILURE : undefined);
    const outcomes = await Promise.all(from(0, 8).map(() => next().catch((error: { code: number }) => error.code)));
    expect(outcomes).toEqual([...from(1076, 5), 500, 500, 500]);
    expect(underWay()).toBe(0);
    await expect(next()).rejects.toMatchObject({ code: 500 });
    expect(underWay()).toBe(0);
    expect(reservationsOf(sequence.name)).toHaveLength(8);
  });

  it('never gives two instances the same number: each takes blocks of its own, and a block left unused leaves a gap', async () => {
    const sequence = newSequence();
    const other = await anotherInstance();
    expect(await take(nextInSequence, sequence, 1)).toEqual([1001]);
    expect(await take(other, sequence, 1)).toEqual([1021]);
    expect(await take(nextInSequence, sequence, 1)).toEqual([1002]);
    expect(await take(other, sequence, 1)).toEqual([1022]);

    const busy = newSequence();
    const instances = [nextInSequence, other, await anotherInstance()];
    const taken = await Promise.all(instances.map((next) => Promise.all(from(0, 25).map(() => next(documents, busy.tenantId, busy.name)))));
    const all = taken.flat();
    expect(new Set(all).size).toBe(all.length);
    // Within an instance, in the order they were asked for.
    for (const numbers of taken) expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
  });

  it('first used by two instances at once: one creates it and takes the first block, the other takes the next', async () => {
    const sequence = newSequence();
    const other = await anotherInstance();
    let otherNumber: number | undefined;
    // The first create is held while the other instance creates the sequence first.
    embedded.store.intercept = (record) => {
      if (!isCreateOf(sequence.name)(record)) return undefined;
      embedded.store.intercept = undefined;
      return other(documents, sequence.tenantId, sequence.name).then((number) => void (otherNumber = number));
    };
    expect(await nextInSequence(documents, sequence.tenantId, sequence.name)).toBe(1021);
    expect(otherNumber).toBe(1001);
    expect(reservationsOf(sequence.name).map((record) => record.method)).toEqual(['PATCH', 'POST', 'PATCH', 'POST', 'PATCH']);
  });

  it('fails the call whose own reservation fails (the database client has retried it already), and the next call reserves afresh', async () => {
    const sequence = newSequence();
    let failures = 1;
    embedded.store.intercept = (record) => (isIncrementOf(sequence.name)(record) && failures-- > 0 ? STORE_FAILURE : undefined);
    await expect(nextInSequence(documents, sequence.tenantId, sequence.name)).rejects.toMatchObject({ code: 500 });
    // A failure that is not "no such sequence" creates nothing.
    expect(reservationsOf(sequence.name).map((record) => record.method)).toEqual(['PATCH']);
    expect(await take(nextInSequence, sequence, 2)).toEqual([1001, 1002]);

    const fresh = newSequence();
    failures = 1;
    embedded.store.intercept = (record) => (isCreateOf(fresh.name)(record) && failures-- > 0 ? STORE_FAILURE : undefined);
    await expect(nextInSequence(documents, fresh.tenantId, fresh.name)).rejects.toMatchObject({ code: 500 });
    expect(await take(nextInSequence, fresh, 2)).toEqual([1001, 1002]);
  });

  it('gives a call that waited for a reservation another call started, and that failed, one try of its own', async () => {
    const sequence = newSequence();
    const held = gate();
    let failures = 1;
    embedded.store.intercept = (record) => (isIncrementOf(sequence.name)(record) && failures-- > 0 ? held.pass().then(() => STORE_FAILURE) : undefined);
    const calls = from(0, 3).map(() => nextInSequence(documents, sequence.tenantId, sequence.name).catch((error: { code: number }) => error.code));
    await held.reached;
    held.release();
    // The first call's own reservation failed it; the second tried its own, which the third waited for.
    expect(await Promise.all(calls)).toEqual([500, 1001, 1002]);
    expect(reservationsOf(sequence.name).map((record) => record.method)).toEqual(['PATCH', 'PATCH', 'POST']);
  });

  it('when the store keeps failing, concurrent calls share each try: two reservations fail them all, and it goes on once the store is back', async () => {
    const sequence = newSequence();
    expect(await take(nextInSequence, sequence, 20)).toEqual(from(1001, 20));
    const held = gate();
    let failing = true;
    embedded.store.intercept = (record) => (isIncrementOf(sequence.name)(record) && failing ? held.pass().then(() => STORE_FAILURE) : undefined);
    const before = reservationsOf(sequence.name).length;
    const waiting = from(0, 3).map(() => nextInSequence(documents, sequence.tenantId, sequence.name));
    await held.reached;
    held.release();
    for (const call of waiting) await expect(call).rejects.toMatchObject({ code: 500 });
    // The first call's reservation failed, and so did the one more try all three waited for: no third.
    expect(reservationsOf(sequence.name).length - before).toBe(2);
    failing = false;
    expect(await take(nextInSequence, sequence, 2)).toEqual([1021, 1022]);
  });
});
