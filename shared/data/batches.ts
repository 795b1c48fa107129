import type { Container, OperationInput, OperationResponse, PartitionKey } from '@azure/cosmos';
import { DependencyUnavailableError } from '../errors.js';

/** Cosmos's limits for one transactional batch: 100 operations and 2 MB; the size cap leaves headroom. */
export const MAX_OPERATIONS = 100;
const MAX_BATCH_BYTES = 1_500_000;
/** What Cosmos answers for the operations of a batch that did not run because another one failed. */
const FAILED_DEPENDENCY = 424;

function sizeOf(operation: OperationInput): number {
  return 'resourceBody' in operation ? Buffer.byteLength(JSON.stringify(operation.resourceBody)) : 100;
}

/**
 * Sends one transactional batch and answers each operation's outcome. The SDK reports a batch that
 * could not be sent at all (the database unreachable, or throttling that outlasted its retries) as
 * a plain Error, its status lost: that is the database being unavailable, and is reported as such.
 */
export async function sendBatch(container: Container, operations: readonly OperationInput[], partitionKey: PartitionKey): Promise<OperationResponse[]> {
  try {
    // Copies: the SDK rewrites each operation's partitionKey in place, so a sent operation cannot be sent again.
    const { result = [] } = await container.items.batch(
      operations.map((operation) => ({ ...operation })),
      partitionKey,
    );
    return result;
  } catch (error) {
    throw new DependencyUnavailableError('database', error);
  }
}

/**
 * Sends one batch until each of its operations has either run or counts as done. A delete that
 * finds nothing (404) is done; a batch holding one is rolled back by Cosmos, which answers 424 for
 * the others, so those are sent again without it. Any other failure fails the call.
 */
async function runBatch(container: Container, partitionKey: PartitionKey, operations: readonly OperationInput[]): Promise<void> {
  let pending = operations;
  while (pending.length > 0) {
    const result = await sendBatch(container, pending, partitionKey);
    const again: OperationInput[] = [];
    pending.forEach((operation, index) => {
      const status = result[index]?.statusCode;
      if (status === undefined) throw new Error(`A batch write got no answer for its ${operation.operationType} operation`);
      if (status === FAILED_DEPENDENCY) again.push(operation);
      else if (status >= 400 && !(status === 404 && operation.operationType === 'Delete')) {
        throw new Error(`A batch write failed: ${operation.operationType} answered ${status}`);
      }
    });
    // Every 424 needs another operation's failure to cause it; all 424s would mean no progress.
    if (again.length === pending.length) throw new Error('A batch write failed: every operation answered 424');
    pending = again;
  }
}

/**
 * Runs many writes to one logical partition as transactional batches, as few as the limits allow:
 * one round trip per batch, where the SDK's bulk executor waits to gather work. A 404 on a delete
 * counts as done (a concurrent delete got there first); any other failed operation fails the call.
 */
export async function writeInBatches(container: Container, partitionKey: PartitionKey, operations: readonly OperationInput[]): Promise<void> {
  let batch: OperationInput[] = [];
  let bytes = 0;
  for (const operation of operations) {
    const size = sizeOf(operation);
    if (batch.length === MAX_OPERATIONS || (batch.length > 0 && bytes + size > MAX_BATCH_BYTES)) {
      await runBatch(container, partitionKey, batch);
      batch = [];
      bytes = 0;
    }
    batch.push(operation);
    bytes += size;
  }
  if (batch.length > 0) await runBatch(container, partitionKey, batch);
}
