import { CosmosClient, type OperationInput } from '@azure/cosmos';
import { describe, expect, it } from 'vitest';
import { writeInBatches } from '../../shared/data/batches.js';
import { stack } from '../support/stack.js';

const documents = new CosmosClient({ endpoint: stack.cosmosEndpoint, key: stack.cosmosKey }).database('lms').container('tenant-data');

async function seed(partition: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, index) => `batch-${index}`);
  await writeInBatches(
    documents,
    partition,
    ids.map((id): OperationInput => ({ operationType: 'Create', partitionKey: partition, resourceBody: { id, tenantId: partition, type: 'batch-test' } })),
  );
  return ids;
}

async function remaining(partition: string): Promise<number> {
  const query = { query: 'SELECT VALUE COUNT(1) FROM c WHERE c.tenantId = @partition', parameters: [{ name: '@partition', value: partition }] };
  const { resources } = await documents.items.query(query, { partitionKey: partition }).fetchAll();
  return resources[0] as number;
}

const deletes = (partition: string, ids: string[]) => ids.map((id): OperationInput => ({ operationType: 'Delete', partitionKey: partition, id }));

describe('writing in batches', () => {
  it('deletes everything even when some documents were already deleted by someone else', async () => {
    const partition = `batches-${crypto.randomUUID()}`;
    const ids = await seed(partition, 250);
    expect(await remaining(partition)).toBe(250);
    // Gone before the batches run: each makes Cosmos answer 404 for it and 424 for the rest of its batch.
    for (const id of [ids[0]!, ids[57]!, ids[99]!, ids[180]!]) await documents.item(id, partition).delete();
    await writeInBatches(documents, partition, deletes(partition, ids));
    expect(await remaining(partition)).toBe(0);
  });

  it('fails on any other failed operation, naming it', async () => {
    const partition = `batches-${crypto.randomUUID()}`;
    const [existing] = await seed(partition, 1);
    const operations: OperationInput[] = [
      { operationType: 'Create', partitionKey: partition, resourceBody: { id: 'fresh', tenantId: partition, type: 'batch-test' } },
      { operationType: 'Create', partitionKey: partition, resourceBody: { id: existing!, tenantId: partition, type: 'batch-test' } },
    ];
    await expect(writeInBatches(documents, partition, operations)).rejects.toThrow('A batch write failed: Create answered 409');
  });
});
