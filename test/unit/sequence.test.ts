/**
 * The per-tenant sequences that make the readable ids (shared/data/sequence.ts), in process, against
 * the embedded Cosmos store of the local stack started by this file, through a proxy
 * (test/support/cosmos-proxy.ts) that sees each reservation and can fail or hold one. Another
 * instance of the app is another copy of the module (vi.resetModules), with blocks of its own.
 */
import { randomUUID } from 'node:crypto';
import type { Container } from '@azure/cosmos';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { container } from '../../shared/data/cosmos.js';
import { nextInSequence } from '../../shared/data/sequence.js';
import { type CosmosRequestRecord, STORE_FAILURE } from '../support/cosmos-proxy.js';
import { embeddedStoreForTests } from '../support/embedded-store.js';
import { gate, waitFor } from '../support/wait.js';

const embedded = embeddedStoreForTests();
let documents: Container;

beforeAll(async () => {
  documents = await container('tenantData');
});

type Next = typeof nextInSequence;

/** Another instance of the app: a fresh copy of the module, which knows none of this one's blocks. */
async function anotherInstance(): Promise<Next> {
  vi.resetModules();
  return (await import('../../shared/data/sequence.js')).nextInSequence;
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
    // Kept in the tenant's partition as a document of its own type; the next block was reserved ahead.
    await waitFor(async () => (await stored(sequence))?.value === 1080);
    expect(await stored(sequence)).toMatchObject({ type: 'sequence', value: 1080 });
    // The first block by creating the document (after an increment found none), then one increment per block of 20.
    expect(reservationsOf(sequence.name).map((record) => record.method)).toEqual(['PATCH', 'POST', 'PATCH', 'PATCH', 'PATCH']);
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
    await waitFor(async () => (await stored(sequence))?.value === 1040);
    expect(reservationsOf(sequence.name).map((record) => record.method)).toEqual(['PATCH', 'POST', 'PATCH']);
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

  it('fails the call whose reservation the store fails, and the next call reserves afresh', async () => {
    const sequence = newSequence();
    embedded.store.intercept = (record) => (isIncrementOf(sequence.name)(record) ? ((embedded.store.intercept = undefined), STORE_FAILURE) : undefined);
    await expect(nextInSequence(documents, sequence.tenantId, sequence.name)).rejects.toMatchObject({ code: 500 });
    // A failure that is not "no such sequence" creates nothing.
    expect(reservationsOf(sequence.name).map((record) => record.method)).toEqual(['PATCH']);
    expect(await take(nextInSequence, sequence, 2)).toEqual([1001, 1002]);

    const fresh = newSequence();
    embedded.store.intercept = (record) => (isCreateOf(fresh.name)(record) ? ((embedded.store.intercept = undefined), STORE_FAILURE) : undefined);
    await expect(nextInSequence(documents, fresh.tenantId, fresh.name)).rejects.toMatchObject({ code: 500 });
    expect(await take(nextInSequence, fresh, 2)).toEqual([1001, 1002]);
  });

  it('when the block reserved ahead fails while a call waits for it, reserves one for that call', async () => {
    const sequence = newSequence();
    expect(await take(nextInSequence, sequence, 10)).toEqual(from(1001, 10));
    const held = gate();
    embedded.store.intercept = (record) =>
      isIncrementOf(sequence.name)(record) ? ((embedded.store.intercept = undefined), held.pass().then(() => STORE_FAILURE)) : undefined;
    // Half the block used: the next one is reserved ahead (and held).
    expect(await take(nextInSequence, sequence, 10)).toEqual(from(1011, 10));
    await held.reached;
    const waiting = nextInSequence(documents, sequence.tenantId, sequence.name);
    held.release();
    expect(await waiting).toBe(1021);
    expect(await take(nextInSequence, sequence, 1)).toEqual([1022]);
  });

  it('when the store keeps failing reservations, fails the calls that need one after one more try, and goes on once the store is back', async () => {
    const sequence = newSequence();
    expect(await take(nextInSequence, sequence, 10)).toEqual(from(1001, 10));
    const held = gate();
    let failing = true;
    embedded.store.intercept = (record) => (isIncrementOf(sequence.name)(record) && failing ? held.pass().then(() => STORE_FAILURE) : undefined);
    expect(await take(nextInSequence, sequence, 10)).toEqual(from(1011, 10));
    await held.reached;
    const before = reservationsOf(sequence.name).length;
    const waiting = [0, 1].map(() => nextInSequence(documents, sequence.tenantId, sequence.name));
    held.release();
    for (const call of waiting) await expect(call).rejects.toMatchObject({ code: 500 });
    // The block reserved ahead failed; the first call's own try failed too, and the second had waited for that one: no third.
    expect(reservationsOf(sequence.name).length - before).toBe(1);
    failing = false;
    expect(await take(nextInSequence, sequence, 2)).toEqual([1021, 1022]);
  });
});
