import type { Container } from '@azure/cosmos';
import { cosmosStatus } from './cosmos.js';

const FIRST_VALUE = 1001;
/**
 * Numbers reserved per trip to the database. Cosmos's atomic patch `incr` hands each instance a
 * block of its own, so concurrent instances never share a number. The next block is reserved in
 * the background once half of the current one is used, so that a create rarely waits for it.
 * Numbers are never reused; a block an instance does not use up leaves a gap.
 */
const BLOCK_SIZE = 20;

interface Block {
  next: number;
  last: number;
}

interface Sequence {
  block: Block | undefined;
  /** The reservation under way, if any: at most one per sequence and instance. */
  upcoming: Promise<Block> | undefined;
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

function reserveNext(sequence: Sequence, container: Container, tenantId: string, id: string): Promise<Block> {
  const upcoming = reserveBlock(container, tenantId, id);
  sequence.upcoming = upcoming;
  // A failed reservation is forgotten: the create that needs a block asks again, and reports the failure if it lasts.
  upcoming.catch(() => {
    if (sequence.upcoming === upcoming) sequence.upcoming = undefined;
  });
  return upcoming;
}

/** The next number of a per-tenant sequence, from this instance's current block or a new one. */
export async function nextInSequence(container: Container, tenantId: string, name: string): Promise<number> {
  const id = `sequence-${name}`;
  const key = `${tenantId}/${id}`;
  let sequence = sequences.get(key);
  if (!sequence) sequences.set(key, (sequence = { block: undefined, upcoming: undefined }));
  let retried = false;
  for (;;) {
    const { block } = sequence;
    if (block && block.next <= block.last) {
      const number = block.next++;
      // Its failure is handled where it is awaited (or forgotten, see reserveNext).
      if (!sequence.upcoming && block.last - number < BLOCK_SIZE / 2) void reserveNext(sequence, container, tenantId, id);
      return number;
    }
    // Concurrent creates wait for the same reservation instead of each taking a block.
    const started = sequence.upcoming;
    const upcoming = started ?? reserveNext(sequence, container, tenantId, id);
    let reserved: Block;
    try {
      reserved = await upcoming;
    } catch (error) {
      // A reservation started ahead or by another create failed: try one of this create's own before failing it.
      if (!started || retried) throw error;
      retried = true;
      continue;
    }
    // The first to resume puts the new block in place; the others find it there.
    if (sequence.upcoming === upcoming) {
      sequence.block = reserved;
      sequence.upcoming = undefined;
    }
  }
}
