import type { Container } from '@azure/cosmos';
import { cosmosStatus } from './cosmos.js';

const FIRST_VALUE = 1001;
/**
 * Numbers reserved per trip to the database. Cosmos's atomic patch `incr` hands each instance a
 * block of its own, so concurrent instances never share a number, and most creates cost no trip
 * for their id. Numbers are never reused; a block an instance does not use up leaves a gap.
 */
const BLOCK_SIZE = 20;

interface Block {
  next: number;
  last: number;
}

const blocks = new Map<string, Block>();
const reserving = new Map<string, Promise<Block>>();

async function reserveBlock(container: Container, tenantId: string, id: string): Promise<Block> {
  try {
    const { resource } = await container.item(id, tenantId).patch<{ value: number }>([{ op: 'incr', path: '/value', value: BLOCK_SIZE }]);
    return { next: resource!.value - BLOCK_SIZE + 1, last: resource!.value };
  } catch (error) {
    if (cosmosStatus(error) !== 404) throw error;
  }
  // First use in this tenant: whoever creates the document takes the first block; the others increment.
  try {
    await container.items.create({ id, tenantId, type: 'sequence', value: FIRST_VALUE + BLOCK_SIZE - 1 });
    return { next: FIRST_VALUE, last: FIRST_VALUE + BLOCK_SIZE - 1 };
  } catch (error) {
    if (cosmosStatus(error) !== 409) throw error;
    return reserveBlock(container, tenantId, id);
  }
}

/** The next number of a per-tenant sequence, from this instance's current block or a new one. */
export async function nextInSequence(container: Container, tenantId: string, name: string): Promise<number> {
  const id = `sequence-${name}`;
  const key = `${tenantId}/${id}`;
  for (;;) {
    const block = blocks.get(key);
    if (block && block.next <= block.last) return block.next++;
    // One reservation at a time per sequence: concurrent creates wait for it instead of each taking a block.
    let pending = reserving.get(key);
    if (!pending) {
      pending = reserveBlock(container, tenantId, id).finally(() => reserving.delete(key));
      reserving.set(key, pending);
      blocks.set(key, await pending);
    } else {
      await pending;
    }
  }
}
