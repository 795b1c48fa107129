import type { Container } from '@azure/cosmos';
import { cosmosStatus } from './cosmos.js';

const FIRST_VALUE = 1001;

/**
 * The next number of a per-tenant sequence. Cosmos's atomic patch `incr` makes concurrent callers
 * each get their own number in one round trip; numbers are never handed out twice.
 */
export async function nextInSequence(container: Container, tenantId: string, name: string): Promise<number> {
  const id = `sequence-${name}`;
  try {
    const { resource } = await container.item(id, tenantId).patch<{ value: number }>([{ op: 'incr', path: '/value', value: 1 }]);
    return resource!.value;
  } catch (error) {
    if (cosmosStatus(error) !== 404) throw error;
  }
  // First use in this tenant: whoever creates the document takes the first number; the others increment.
  try {
    await container.items.create({ id, tenantId, type: 'sequence', value: FIRST_VALUE });
    return FIRST_VALUE;
  } catch (error) {
    if (cosmosStatus(error) !== 409) throw error;
    return nextInSequence(container, tenantId, name);
  }
}
