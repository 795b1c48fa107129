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

/** An operation made from the operations of a batch and sent first in it (a count of them, say): it commits with exactly those. */
export type Tally = (operations: readonly OperationInput[]) => OperationInput;

/**
 * Sends one batch until each of its operations has either run or counts as done. A delete that
 * finds nothing (404) is done; a batch holding one is rolled back by Cosmos, which answers 424 for
 * the others, so those are sent again without it, with their tally made again. Any other failure
 * fails the call, with the operation's status as the error's code.
 */
async function runBatch(container: Container, partitionKey: PartitionKey, operations: readonly OperationInput[], tally: Tally | undefined): Promise<void> {
  let pending = operations;
  while (pending.length > 0) {
    const tallied = tally?.(pending);
    const sent = tallied ? [tallied, ...pending] : pending;
    const result = await sendBatch(container, sent, partitionKey);
    const again: OperationInput[] = [];
    sent.forEach((operation, index) => {
      const status = result[index]?.statusCode;
      if (status === undefined) throw new Error(`A batch write got no answer for its ${operation.operationType} operation`);
      // The tally is not sent again as it was: it is made again from what is.
      if (status === FAILED_DEPENDENCY) {
        if (operation !== tallied) again.push(operation);
      } else if (status >= 400 && !(status === 404 && operation.operationType === 'Delete')) {
        throw Object.assign(new Error(`A batch write failed: ${operation.operationType} answered ${status}`), { code: status });
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
 * A `tally` goes first in each batch (which then holds one write fewer), made from the writes sent
 * with it, so that it commits with them or not at all.
 */
export async function writeInBatches(
  container: Container,
  partitionKey: PartitionKey,
  operations: readonly OperationInput[],
  options: { tally?: Tally } = {},
): Promise<void> {
  const { tally } = options;
  const most = tally ? MAX_OPERATIONS - 1 : MAX_OPERATIONS;
  let batch: OperationInput[] = [];
  let bytes = 0;
  for (const operation of operations) {
    const size = sizeOf(operation);
    if (batch.length === most || (batch.length > 0 && bytes + size > MAX_BATCH_BYTES)) {
      await runBatch(container, partitionKey, batch, tally);
      batch = [];
      bytes = 0;
    }
    batch.push(operation);
    bytes += size;
  }
  if (batch.length > 0) await runBatch(container, partitionKey, batch, tally);
}
