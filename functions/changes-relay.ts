import { app, type InvocationContext } from '@azure/functions';
import { CONTAINERS } from '../shared/data/containers.js';
import { relayChanges } from '../shared/background/change-feed.js';

/**
 * The change feed of `tenant-data`, a page at a time: each committed change's background work is
 * handed over here (shared/background/change-feed.ts), in a few writes and queue messages, never a call to a receiver.
 * A failure of ours (the database, the queue) fails the invocation, and the retry policy runs it
 * again, without end, before the lease's checkpoint moves past the page: no change is ever skipped.
 */
export async function changesRelay(documents: unknown[], context: InvocationContext): Promise<void> {
  const malformed = await relayChanges(documents);
  if (malformed.length) context.warn(`Left alone, not as the app writes them: ${malformed.join(', ')}`);
}

app.cosmosDB('changes-relay', {
  connection: 'COSMOS_CONNECTION',
  databaseName: '%COSMOS_DATABASE%',
  containerName: CONTAINERS.tenantData.id,
  leaseContainerName: CONTAINERS.leases.id,
  // Deployment makes the lease container (docs/deploy.md): an identity with data access only cannot.
  createLeaseContainerIfNotExists: false,
  // Whatever was written before the first lease existed is handed over too; doing it twice is harmless.
  startFromBeginning: true,
  // After the feed is drained, the next look is this soon: an event waits at most this long to start out.
  // Five reads a second per lease while nothing changes (the default is one every 5 s).
  feedPollDelay: 200,
  maxItemsPerInvocation: 100,
  // A crashed instance's range moves to another within 20 s, not the default minute.
  leaseAcquireInterval: 5_000,
  leaseExpirationInterval: 20_000,
  leaseRenewInterval: 5_000,
  retry: { strategy: 'exponentialBackoff', maxRetryCount: -1, minimumInterval: { seconds: 1 }, maximumInterval: { minutes: 1 } },
  handler: changesRelay,
});
