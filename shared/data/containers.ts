import type { ContainerDefinition } from '@azure/cosmos';

/**
 * The containers the app uses, with the partitioning and indexing they need. Deployment creates them
 * from these definitions (the local stack does too); the app itself never creates a container.
 * Every container is partitioned by tenant first, so that no query can reach another tenant's data
 * and every tenant-wide list is a single-partition query.
 */
export const CONTAINERS = {
  projects: {
    id: 'projects',
    partitionKey: { paths: ['/tenantId'] },
    // Records such as Idempotency-Key results carry their own `ttl`.
    defaultTtl: -1,
    indexingPolicy: {
      indexingMode: 'consistent',
      includedPaths: [{ path: '/*' }],
      // Long free text is never filtered or sorted on: indexing it would only cost write RUs.
      excludedPaths: [{ path: '/description/?' }, { path: '/snapshot/*' }, { path: '/"_etag"/?' }],
      compositeIndexes: [
        [{ path: '/type', order: 'ascending' }, { path: '/createdAt', order: 'descending' }],
        [{ path: '/type', order: 'ascending' }, { path: '/nameSort', order: 'ascending' }],
        [{ path: '/status', order: 'ascending' }, { path: '/createdAt', order: 'descending' }],
      ],
    },
  },
} as const satisfies Record<string, ContainerDefinition>;

export type ContainerName = keyof typeof CONTAINERS;
