import type { Container, OperationInput, PartitionKey } from '@azure/cosmos';

/** Cosmos's limits for one transactional batch: 100 operations and 2 MB; the size cap leaves headroom. */
const MAX_OPERATIONS = 100;
const MAX_BATCH_BYTES = 1_500_000;

function sizeOf(operation: OperationInput): number {
  return 'resourceBody' in operation ? Buffer.byteLength(JSON.stringify(operation.resourceBody)) : 100;
}

/**
 * Runs many writes to one logical partition as transactional batches, as few as the limits allow:
 * one round trip per batch, where the SDK's bulk executor waits to gather work. A 404 on a delete
 * counts as done; any other failed operation fails the call.
 */
export async function writeInBatches(container: Container, partitionKey: PartitionKey, operations: readonly OperationInput[]): Promise<void> {
  let batch: OperationInput[] = [];
  let bytes = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const { result = [] } = await container.items.batch(batch, partitionKey);
    const failed = result.findIndex((outcome, index) => outcome.statusCode >= 400 && !(outcome.statusCode === 404 && batch[index]!.operationType === 'Delete'));
    if (failed >= 0) throw new Error(`A batch write failed: ${batch[failed]!.operationType} answered ${result[failed]!.statusCode}`);
    batch = [];
    bytes = 0;
  };
  for (const operation of operations) {
    const size = sizeOf(operation);
    if (batch.length === MAX_OPERATIONS || (batch.length > 0 && bytes + size > MAX_BATCH_BYTES)) await flush();
    batch.push(operation);
    bytes += size;
  }
  await flush();
}
