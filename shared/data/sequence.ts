import type { Container } from '@azure/cosmos';
import { cosmosStatus } from './cosmos.js';

const FIRST_VALUE = 1001;
/**
 * Numbers reserved per trip to the database. Cosmos's atomic patch `incr` hands each instance a
 * block of its own, so concurrent instances never share a number. A block is reserved when the
 * current one is used up, by the create that needs it, before it goes on: nothing is left running
 * after the answer (a Flex Consumption instance may be frozen once it is sent). Numbers are never
 * reused; a block an instance does not use up leaves a gap.
 */
export const BLOCK_SIZE = 20;

interface Block {
  next: number;
  last: number;
}

interface Sequence {
  block: Block | undefined;
  /** The reservation under way, if any: every create that finds the block used up waits for this one. */
  reserving: Promise<void> | undefined;
}

const sequences = new Map<string, Sequence>();

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

/** Starts the sequence's reservation, which puts its block in place, or is forgotten if it fails. Always awaited by the create that starts it. */
function reserve(sequence: Sequence, container: Container, tenantId: string, id: string): Promise<void> {
  const reserving = reserveBlock(container, tenantId, id)
    .then((block) => void (sequence.block = block))
    .finally(() => (sequence.reserving = undefined));
  sequence.reserving = reserving;
  return reserving;
}

/** The next number of a per-tenant sequence, from this instance's current block or a new one. */
export async function nextInSequence(container: Container, tenantId: string, name: string): Promise<number> {
  const id = `sequence-${name}`;
  const key = `${tenantId}/${id}`;
  let sequence = sequences.get(key);
  if (!sequence) sequences.set(key, (sequence = { block: undefined, reserving: undefined }));
  for (let retried = false; ;) {
    const { block } = sequence;
    if (block && block.next <= block.last) return block.next++;
    // Concurrent creates wait for the same reservation instead of each taking a block; they resume in the order they asked.
    const started = sequence.reserving;
    try {
      await (started ?? reserve(sequence, container, tenantId, id));
    } catch (error) {
      // A create's own reservation that fails fails it: the database client has retried it within its bounds already. One
      // another create started is tried once more (the first to resume starts it, the others wait for it).
      if (!started || retried) throw error;
      retried = true;
    }
  }
}
