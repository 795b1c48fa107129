/**
 * The embedded Cosmos DB: @vercel/cosmosdb-server speaks the Cosmos REST API over HTTPS, so the app
 * uses the real @azure/cosmos client against it. The server keeps data in memory; this module makes
 * it survive restarts by writing a snapshot after writes and loading it at start.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent } from 'node:https';
import { dirname } from 'node:path';
import { CosmosClient, type OperationInput, type PartitionKey } from '@azure/cosmos';
import { createHttpsServer } from '@vercel/cosmosdb-server';
import { writeInBatches } from '../shared/data/batches.js';
import { CONTAINERS } from '../shared/data/containers.js';
import { speedUpEmulatorQueries } from './cosmos-query-speedup.js';
import { keepIdleConnectionsOpen } from './idle-connections.js';

// The emulator checks no signatures; the client still needs a well-formed base64 key.
export const EMULATOR_KEY = Buffer.from('local-cosmos-emulator-key').toString('base64');
const SNAPSHOT_DELAY_MS = 1_000;
const SYSTEM_PROPERTIES = ['_rid', '_self', '_etag', '_ts', '_attachments'];

export interface CosmosEmulatorOptions {
  port: number;
  host: string;
  database: string;
  tls: { cert: string; key: string };
  /** Where data is kept between runs; without it the data lives only as long as the process. */
  snapshotFile?: string;
}

type Snapshot = Record<string, Record<string, unknown>[]>;

/** The document's partition key value(s), read from the container's key paths such as `/tenantId`. */
function partitionKeyOf(paths: readonly string[], document: Record<string, unknown>): PartitionKey {
  const values = paths.map((path) => document[path.slice(1)] as string);
  return values.length === 1 ? values[0]! : values;
}

export async function startCosmosEmulator(options: CosmosEmulatorOptions) {
  speedUpEmulatorQueries();
  const server = keepIdleConnectionsOpen(createHttpsServer({ cert: options.tls.cert, key: options.tls.key, keepAlive: true }));
  // What the app costs the database: data requests and the request units they report, and apart from
  // them the query-plan lookups the SDK sends alongside each query (Azure's gateway answers those, for no RUs).
  // Patches are also counted on their own: the app sends them in the background (reserving ids ahead).
  const counts = { requests: 0, requestCharge: 0, queryPlans: 0, patches: 0 };
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.headers['x-ms-cosmos-is-query-plan-request']) {
      counts.queryPlans += 1;
      return;
    }
    counts.requests += 1;
    if (request.method === 'PATCH') counts.patches += 1;
    response.on('finish', () => (counts.requestCharge += Number(response.getHeader('x-ms-request-charge') ?? 0)));
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const endpoint = `https://${options.host}:${port}/`;
  const agent = new Agent({ ca: options.tls.cert, keepAlive: true });
  const client = new CosmosClient({ endpoint, key: EMULATOR_KEY, agent });

  const { database } = await client.databases.createIfNotExists({ id: options.database });
  for (const definition of Object.values(CONTAINERS)) await database.containers.createIfNotExists(definition);

  async function readSnapshot(): Promise<Snapshot> {
    const snapshot: Snapshot = {};
    for (const { id } of Object.values(CONTAINERS)) {
      const { resources } = await database.container(id).items.readAll().fetchAll();
      snapshot[id] = resources.map((document) => Object.fromEntries(Object.entries(document).filter(([name]) => !SYSTEM_PROPERTIES.includes(name))));
    }
    return snapshot;
  }

  async function restore(file: string): Promise<number> {
    let snapshot: Snapshot;
    try {
      snapshot = JSON.parse(await readFile(file, 'utf8')) as Snapshot;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw new Error(`Cannot read the local database snapshot ${file}; move it away to start empty`, { cause: error });
    }
    let restored = 0;
    for (const [id, documents] of Object.entries(snapshot)) {
      const definition = Object.values(CONTAINERS).find((container) => container.id === id);
      if (!definition) continue;
      const byPartition = new Map<string, { partitionKey: PartitionKey; operations: OperationInput[] }>();
      for (const resourceBody of documents) {
        const partitionKey = partitionKeyOf(definition.partitionKey.paths, resourceBody);
        const group = byPartition.get(JSON.stringify(partitionKey)) ?? { partitionKey, operations: [] };
        group.operations.push({ operationType: 'Upsert', partitionKey, resourceBody: resourceBody as never });
        byPartition.set(JSON.stringify(partitionKey), group);
      }
      for (const { partitionKey, operations } of byPartition.values()) await writeInBatches(database.container(id), partitionKey, operations);
      restored += documents.length;
    }
    return restored;
  }

  let restored = 0;
  let pendingSnapshot: NodeJS.Timeout | undefined;
  let writing: Promise<void> = Promise.resolve();
  const snapshotFile = options.snapshotFile;

  function writeSnapshot(): Promise<void> {
    if (!snapshotFile) return Promise.resolve();
    writing = writing.then(async () => {
      const snapshot = await readSnapshot();
      await mkdir(dirname(snapshotFile), { recursive: true });
      await writeFile(`${snapshotFile}.tmp`, JSON.stringify(snapshot));
      await rename(`${snapshotFile}.tmp`, snapshotFile);
    });
    return writing;
  }

  if (snapshotFile) {
    restored = await restore(snapshotFile);
    server.on('request', (request) => {
      const isWrite = request.method !== 'GET' && request.headers['x-ms-documentdb-isquery'] === undefined;
      if (!isWrite || pendingSnapshot) return;
      pendingSnapshot = setTimeout(() => {
        pendingSnapshot = undefined;
        writeSnapshot().catch((error: unknown) => console.error('Could not save the local database:', error));
      }, SNAPSHOT_DELAY_MS);
    });
  }

  return {
    counts,
    endpoint,
    key: EMULATOR_KEY,
    restored,
    client,
    async close(): Promise<void> {
      if (pendingSnapshot) clearTimeout(pendingSnapshot);
      if (snapshotFile) await writeSnapshot();
      client.dispose();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type CosmosEmulator = Awaited<ReturnType<typeof startCosmosEmulator>>;
