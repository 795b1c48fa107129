import { CosmosClient } from '@azure/cosmos';
import { describe, expect, it } from 'vitest';
import { nextInSequence } from '../../shared/data/sequence.js';
import { stack } from '../support/stack.js';

const database = new CosmosClient({ endpoint: stack.cosmosEndpoint, key: stack.cosmosKey }).database('lms');
const documents = database.container('tenant-data');
// Every call on it fails (404 for the container): a database that cannot take the reservation.
const unreachable = database.container('no-such-container');

const storedValue = async (tenantId: string, name: string) => (await documents.item(`sequence-${name}`, tenantId).read<{ value: number }>()).resource?.value;

describe('per-tenant sequences', () => {
  it('hands out distinct numbers from 1001 to concurrent callers, a block of 20 at a time, none reserved ahead', async () => {
    const tenantId = `sequence-${crypto.randomUUID()}`;
    const numbers = await Promise.all(Array.from({ length: 51 }, () => nextInSequence(documents, tenantId, 'things')));
    expect([...numbers].sort((a, b) => a - b)).toEqual(Array.from({ length: 51 }, (_, index) => 1001 + index));
    // 51 numbers take 3 blocks, reserved by the calls that needed them: the sequence is stored as they left it.
    expect(await storedValue(tenantId, 'things')).toBe(1060);
  });

  it('fails the call whose reservation fails (after one more try), and the next caller reserves again', async () => {
    const tenantId = `sequence-${crypto.randomUUID()}`;
    const numbers: number[] = [];
    for (let index = 0; index < 20; index++) numbers.push(await nextInSequence(documents, tenantId, 'things'));
    // The 21st needs a block, here from a database that fails.
    await expect(nextInSequence(unreachable, tenantId, 'things')).rejects.toMatchObject({ code: 404 });
    for (let index = 0; index < 6; index++) numbers.push(await nextInSequence(documents, tenantId, 'things'));
    expect(numbers).toEqual([...Array.from({ length: 20 }, (_, index) => 1001 + index), ...Array.from({ length: 6 }, (_, index) => 1021 + index)]);
    expect(await storedValue(tenantId, 'things')).toBe(1040);
  });

  it('fails the caller that waits for a reservation the database refuses, and recovers once it can', async () => {
    const tenantId = `sequence-${crypto.randomUUID()}`;
    await expect(nextInSequence(unreachable, tenantId, 'things')).rejects.toMatchObject({ code: 404 });
    expect(await nextInSequence(documents, tenantId, 'things')).toBe(1001);
  });
});
