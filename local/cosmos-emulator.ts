/**
 * The embedded Cosmos DB: @vercel/cosmosdb-server speaks the Cosmos REST API over HTTPS, so the app
 * uses the real @azure/cosmos client against it. The server keeps data in memory; with a data folder,
 * every write it answers is first made durable in a journal (local/cosmos-journal.ts), from which the
 * documents are loaded again at start.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent } from 'node:https';
import { CosmosClient, type OperationInput, type PartitionKey } from '@azure/cosmos';
import { createHttpsServer } from '@vercel/cosmosdb-server';
import { writeInBatches } from '../shared/data/batches.js';
import { CONTAINERS } from '../shared/data/containers.js';
import { speedUpEmulatorQueries } from './cosmos-query-speedup.js';
import { DocumentStore, type Effect, type PartitionKeyValue, type StoredDocument } from './cosmos-journal.js';
import { keepIdleConnectionsOpen } from './idle-connections.js';

// The emulator checks no signatures; the client still needs a well-formed base64 key.
export const EMULATOR_KEY = Buffer.from('local-cosmos-emulator-key').toString('base64');
// Set by the server on each document; it sets them anew when a document is loaded at start.
const SYSTEM_PROPERTIES = ['_rid', '_self', '_etag', '_ts', '_attachments'];
// A document request, as the server routes it: /dbs/{database}/colls/{container}/docs[/{id}].
const DOCUMENT_PATH = /^\/+dbs\/([^/?]+)\/colls\/([^/?]+)\/docs(?:\/([^/?]+))?\/*(?:\?|$)/;
const WRITE_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];

export interface CosmosEmulatorOptions {
  port: number;
  host: string;
  database: string;
  tls: { cert: string; key: string };
  /** Where the documents are kept between runs; without it they live only as long as the process. */
  dataDir?: string;
  /** The journal size that starts a compaction (see local/cosmos-journal.ts). */
  compactAfterBytes?: number;
}

/** The document's partition key value(s), read from the container's key paths such as `/tenantId`. */
function partitionKeyOf(paths: readonly string[], document: Record<string, unknown>): PartitionKey {
  const values = paths.map((path) => document[path.slice(1)] as string);
  return values.length === 1 ? values[0]! : values;
}

const isTrue = (header: string | string[] | undefined) => [header].flat().some((value) => value?.toLowerCase() === 'true');

/** A write to a document of one of the app's containers, or undefined for any other request. */
function documentWrite(request: IncomingMessage, database: string): { container: string; id: string | undefined; batch: boolean } | undefined {
  if (!WRITE_METHODS.includes(request.method ?? '') || isTrue(request.headers['x-ms-documentdb-isquery'])) return undefined;
  if (request.headers['content-type'] === 'application/query+json') return undefined;
  const match = DOCUMENT_PATH.exec(request.url ?? '');
  if (!match) return undefined;
  let segments: (string | undefined)[];
  try {
    segments = match.slice(1).map((segment) => segment && decodeURIComponent(segment));
  } catch {
    return undefined; // the server cannot route it either
  }
  const [databaseId, container, id] = segments;
  if (databaseId !== database || !Object.values(CONTAINERS).some((definition) => definition.id === container)) return undefined;
  return { container: container!, id, batch: isTrue(request.headers['x-ms-cosmos-is-batch-request']) };
}

/**
 * A partition key as the client sends it (`["t1"]`, or `["t1","p1"]` for a hierarchical key, in a
 * header or a batch operation), as the values the server files the document under.
 */
function partitionKeyValue(sent: unknown): PartitionKeyValue {
  let parsed: unknown;
  try {
    parsed = typeof sent === 'string' ? JSON.parse(sent) : sent;
  } catch {
    return [];
  }
  return [parsed].flat().map((value: unknown) => (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : null));
}

function withoutSystemProperties(document: StoredDocument): StoredDocument {
  return Object.fromEntries(Object.entries(document).filter(([name]) => !SYSTEM_PROPERTIES.includes(name))) as StoredDocument;
}

interface BatchOperation {
  operationType: string;
  id?: string;
  partitionKey?: string;
}

/**
 * What a write did, read from the request and the server's answer: the document as the answer shows
 * it after a create, upsert, replace or patch; the id and partition key of a delete; each successful
 * operation of a batch.
 */
function effectsOf(request: IncomingMessage, write: NonNullable<ReturnType<typeof documentWrite>>, answer: string | undefined, batchBody: string): Effect[] {
  const { container } = write;
  if (request.method === 'DELETE')
    return write.id ? [{ container, delete: { partitionKey: partitionKeyValue(request.headers['x-ms-documentdb-partitionkey']), id: write.id } }] : [];
  if (!write.batch) return [{ container, put: withoutSystemProperties(JSON.parse(answer!) as StoredDocument) }];
  const operations = JSON.parse(batchBody) as BatchOperation[];
  const results = JSON.parse(answer!) as { statusCode: number; resourceBody?: StoredDocument }[];
  return results.flatMap((result, index): Effect[] => {
    const operation = operations[index];
    if (result.statusCode >= 400 || !operation || operation.operationType === 'Read') return [];
    if (operation.operationType === 'Delete') return [{ container, delete: { partitionKey: partitionKeyValue(operation.partitionKey), id: operation.id! } }];
    return result.resourceBody ? [{ container, put: withoutSystemProperties(result.resourceBody) }] : [];
  });
}

/**
 * Holds each answer of the server until what it reflects is on disk: a write's own effects, and for
 * any other request the writes recorded before it, so that no answer shows a write that a crash could
 * still take back. Writes are recorded as they are answered, which is the order the server applied them.
 */
function answerWhenDurable(store: DocumentStore, database: string) {
  return (request: IncomingMessage, response: ServerResponse) => {
    const write = documentWrite(request, database);
    // A batch's deletes are named only in its body, which the server reads too.
    const batchChunks: Buffer[] = [];
    if (write?.batch) request.on('data', (chunk: Buffer) => batchChunks.push(chunk));
    const end = response.end.bind(response) as (answer?: string) => ServerResponse;
    response.end = ((answer?: string) => {
      const succeeded = response.statusCode >= 200 && response.statusCode < 300;
      const effects = write && succeeded ? effectsOf(request, write, answer, Buffer.concat(batchChunks).toString('utf8')) : [];
      const durable = effects.length > 0 ? store.record(effects) : store.settled();
      if (!durable) return end(answer);
      durable.then(
        () => end(answer),
        (error: Error) => {
          // Never acknowledge what is not on disk: the client sees the write fail.
          response.statusCode = 503;
          response.removeHeader('etag');
          end(JSON.stringify({ code: 'ServiceUnavailable', message: error.message }));
        },
      );
      return response;
    }) as ServerResponse['end'];
  };
}

export async function startCosmosEmulator(options: CosmosEmulatorOptions) {
  speedUpEmulatorQueries();
  // First, as it may refuse a damaged journal.
  const store = options.dataDir
    ? await DocumentStore.open({
        folder: options.dataDir,
        partitionKeyPaths: Object.fromEntries(Object.values(CONTAINERS).map((definition) => [definition.id, definition.partitionKey.paths])),
        ...(options.compactAfterBytes ? { compactAfterBytes: options.compactAfterBytes } : {}),
      })
    : undefined;
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

  /** Loads the kept documents into the server, as batches of upserts per partition. */
  async function restore(store: DocumentStore): Promise<number> {
    const byPartition = new Map<string, { container: string; partitionKey: PartitionKey; operations: OperationInput[] }>();
    const documents = store.documents();
    for (const { container, document } of documents) {
      const definition = Object.values(CONTAINERS).find((candidate) => candidate.id === container);
      if (!definition) continue;
      const partitionKey = partitionKeyOf(definition.partitionKey.paths, document);
      const key = JSON.stringify([container, partitionKey]);
      const group = byPartition.get(key) ?? { container, partitionKey, operations: [] };
      group.operations.push({ operationType: 'Upsert', partitionKey, resourceBody: document as never });
      byPartition.set(key, group);
    }
    for (const { container, partitionKey, operations } of byPartition.values()) await writeInBatches(database.container(container), partitionKey, operations);
    return documents.length;
  }

  let restored = 0;
  if (store) {
    restored = await restore(store);
    // From here on, after the restore's own writes: it runs before the server's handler can answer.
    server.prependListener('request', answerWhenDurable(store, options.database));
  }

  return {
    counts,
    endpoint,
    key: EMULATOR_KEY,
    restored,
    /** With a data folder: the write requests journaled and the fsyncs they took. */
    journal: store?.stats,
    client,
    async close(): Promise<void> {
      client.dispose();
      agent.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Answers still waiting for the disk are released as their writes land; then the last snapshot.
      await store?.close();
      await closed;
    },
  };
}

export type CosmosEmulator = Awaited<ReturnType<typeof startCosmosEmulator>>;
