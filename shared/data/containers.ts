import { PartitionKeyDefinitionVersion, PartitionKeyKind, type ContainerDefinition } from '@azure/cosmos';

/**
 * The containers the app uses, with the partitioning and indexing they need. Deployment creates them
 * from these definitions (the local stack does too); the app itself never creates a container.
 *
 * `tenant-data` holds every document of a tenant in one logical partition (`/tenantId`): projects,
 * tasks, recorded users, sequences, Idempotency-Key records, events, webhook subscriptions and their
 * deliveries, RAG jobs, told apart by `type`. A request
 * can therefore never reach another tenant's data, every list is a single-partition query, a
 * project and its tasks can change together in one transactional batch, and point reads by id
 * cost one request. The price is Cosmos's 20 GB limit per logical partition, per tenant.
 */
export const CONTAINERS = {
  tenantData: {
    id: 'tenant-data',
    partitionKey: { paths: ['/tenantId'] },
    // Records such as Idempotency-Key results carry their own `ttl`.
    defaultTtl: -1,
    indexingPolicy: {
      indexingMode: 'consistent',
      includedPaths: [{ path: '/*' }],
      // Long free text is never filtered or sorted on: indexing it would only cost write RUs.
      excludedPaths: [{ path: '/description/?' }, { path: '/snapshot/*' }, { path: '/data/*' }, { path: '/sourceIds/*' }, { path: '/"_etag"/?' }],
      // One per list query's filter-and-sort, so a sorted page reads only what it returns. Cosmos
      // serves both directions of a sort from one composite index.
      compositeIndexes: [
        [
          { path: '/type', order: 'ascending' },
          { path: '/createdAt', order: 'descending' },
        ],
        [
          { path: '/type', order: 'ascending' },
          { path: '/nameSort', order: 'ascending' },
        ],
        [
          { path: '/type', order: 'ascending' },
          { path: '/dueDate', order: 'ascending' },
        ],
        [
          { path: '/type', order: 'ascending' },
          { path: '/priorityRank', order: 'descending' },
        ],
        [
          { path: '/type', order: 'ascending' },
          { path: '/requestedAt', order: 'descending' },
        ],
        [
          { path: '/type', order: 'ascending' },
          { path: '/timestamp', order: 'descending' },
        ],
        [
          { path: '/type', order: 'ascending' },
          { path: '/eventType', order: 'ascending' },
          { path: '/timestamp', order: 'descending' },
        ],
        [
          { path: '/projectId', order: 'ascending' },
          { path: '/createdAt', order: 'descending' },
        ],
        [
          { path: '/projectId', order: 'ascending' },
          { path: '/dueDate', order: 'ascending' },
        ],
        [
          { path: '/projectId', order: 'ascending' },
          { path: '/priorityRank', order: 'descending' },
        ],
      ],
    },
  },
  /**
   * The RAG index: one document per chunk, under a hierarchical partition key (tenant, then project),
   * so that no tenant meets Cosmos's 20 GB limit of one logical partition; a query that names the
   * tenant alone still reaches only that tenant's partitions. The RAG application reads it;
   * docs/rag-index.md describes the fields and the vector and full-text policies to add on Azure
   * once the embedding model (and so the vector size) is chosen.
   */
  ragIndex: {
    id: 'rag-index',
    partitionKey: { paths: ['/tenantId', '/projectId'], kind: PartitionKeyKind.MultiHash, version: PartitionKeyDefinitionVersion.V2 },
    indexingPolicy: {
      indexingMode: 'consistent',
      includedPaths: [{ path: '/*' }],
      excludedPaths: [{ path: '/content/?' }, { path: '/embedding/*' }, { path: '/"_etag"/?' }],
    },
  },
  /**
   * The leases of the change feed trigger (functions/changes-relay.ts): one document per partition key
   * range of `tenant-data`, holding which instance works on the range and how far it got. The change
   * feed processor wants it partitioned by `/id`.
   */
  leases: {
    id: 'leases',
    partitionKey: { paths: ['/id'] },
  },
} as const satisfies Record<string, ContainerDefinition>;

export type ContainerName = keyof typeof CONTAINERS;
