/**
 * The local stack's embedded Cosmos store for a file of fast tests, started in the test's own process
 * behind a proxy (cosmos-proxy.ts) that can fail a request or hold it while the test writes first.
 */
import { randomBytes } from 'node:crypto';
import type { Container } from '@azure/cosmos';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { startCosmosEmulator, type CosmosEmulator } from '../../local/cosmos/emulator.js';
import { startCosmosProxy, type CosmosProxy } from './cosmos-proxy.js';

export interface EmbeddedStore {
  cosmos: CosmosEmulator;
  /** What the app reaches: its settings point here. */
  store: CosmosProxy;
  /** A container of the app's database as another instance reaches it: past the proxy, never held. */
  direct(container?: 'tenant-data' | 'rag-index'): Container;
}

/**
 * Starts the store before the file's tests (the app's COSMOS_ settings pointing at it), clears each test's intercept after it, and
 * stops it after them. The app's lists hand out signed cursors: it gets a key of the file's own to sign them with.
 */
export function embeddedStoreForTests(): EmbeddedStore {
  process.env.CURSOR_SIGNING_KEY = randomBytes(32).toString('base64');
  const parts = {} as EmbeddedStore;
  parts.direct = (container = 'tenant-data') => parts.cosmos.client.database('lms').container(container);
  beforeAll(async () => {
    parts.cosmos = await startCosmosEmulator({ port: 0, host: '127.0.0.1', database: 'lms', tls: inject('trustedTls') });
    parts.store = await startCosmosProxy({ endpoint: parts.cosmos.endpoint, key: parts.cosmos.key, tls: inject('trustedTls') });
    Object.assign(process.env, { COSMOS_CONNECTION: parts.store.connectionString, COSMOS_DATABASE: 'lms' });
  });
  afterEach(() => {
    if (parts.store) parts.store.intercept = undefined;
  });
  afterAll(async () => {
    await parts.store?.close();
    await parts.cosmos?.close();
  });
  return parts;
}

/** The tenant's documents of one type in `container`, read as given (past the proxy, when the test reads as another instance). */
export async function documentsOf<T>(container: Container, tenantId: string, type: string): Promise<T[]> {
  const query = {
    query: 'SELECT * FROM c WHERE c.tenantId = @tenantId AND c.type = @type',
    parameters: [
      { name: '@tenantId', value: tenantId },
      { name: '@type', value: type },
    ],
  };
  const { resources } = await container.items.query<T>(query, { partitionKey: tenantId }).fetchAll();
  return resources;
}
