import { CosmosClient, type Container, type CosmosClientOptions } from '@azure/cosmos';
import { cosmosSettings } from '../settings/read.js';
import { connectionCredential } from '../settings/connection-credential.js';
import { lazily } from '../lib/lazy.js';
import { CONTAINERS, type ContainerName } from './containers.js';

/** One client per process, made on first use, so that settings are read only when needed. */
const client = lazily(async (): Promise<CosmosClient> => {
  const { connection } = cosmosSettings();
  const options: CosmosClientOptions = {
    connectionPolicy: {
      requestTimeout: 10_000,
      // The account is in one region (a serverless one cannot be in more), so there is no other endpoint to
      // discover; with discovery on, the client retries an endpoint it cannot reach once a second for 120 s,
      // and every request hangs that long. Off, the caller gets its 503 with Retry-After at once.
      enableEndpointDiscovery: false,
      // Throttling (429) is retried for a bounded time, then reported to the caller as 503.
      retryOptions: { maxRetryAttemptCount: 5, fixedRetryIntervalInMilliseconds: 0, maxWaitTimeInSeconds: 5 },
    },
  };
  if ('connectionString' in connection) return new CosmosClient({ ...options, connectionString: connection.connectionString });
  // Identity-based: the app signs in as its managed identity.
  return new CosmosClient({ ...options, endpoint: connection.accountEndpoint, aadCredentials: await connectionCredential(connection) });
});

const containers = new Map<ContainerName, Container>();

/** One handle per container and process. */
export async function container(name: ContainerName): Promise<Container> {
  const known = containers.get(name);
  if (known) return known;
  const created = (await client()).database(cosmosSettings().database).container(CONTAINERS[name].id);
  containers.set(name, created);
  return created;
}

/** The HTTP status of a failed Cosmos call, or undefined for anything else. */
export function cosmosStatus(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}
