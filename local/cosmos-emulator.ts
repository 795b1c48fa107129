/**
 * The embedded Cosmos DB (docs/local-stack.md): @vercel/cosmosdb-server's account and routes behind an
 * HTTPS front of ours, spoken to by the real @azure/cosmos client. The front adds what the package lacks
 * and Azure has: the change feed (local/cosmos-change-feed.ts), atomic transactional batches, and writes
 * made durable (local/cosmos-journal.ts) before they are answered and shown in the change feed.
 */
import { createServer, type ServerOptions } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent } from 'node:https';
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { CosmosClient } from '@azure/cosmos';
import { CONTAINERS } from '../shared/data/containers.js';
import { ContainerFeed, feedRequest, isChangeFeedRequest, type ChangedDocument } from './cosmos-change-feed.js';
import { installQueryShortcuts } from './cosmos-query-shortcuts.js';
import { DocumentStore, type Documents, type Effect, type PartitionKeyValue, type StoredDocument } from './cosmos-journal.js';
import { keepIdleConnectionsOpen } from './idle-connections.js';

// The emulator checks no signatures; the client still needs a well-formed base64 key.
export const EMULATOR_KEY = Buffer.from('local-cosmos-emulator-key').toString('base64');
// Set by the server on each document; it sets them anew when a document is loaded at start.
const SYSTEM_PROPERTIES = ['_rid', '_self', '_etag', '_ts', '_attachments'];
// A documents request, as the server routes it: /dbs/{database}/colls/{container}/docs[/{id}].
const DOCUMENTS_PATH = /^\/+dbs\/([^/?]+)\/colls\/([^/?]+)\/docs(?:\/([^/?]+))?\/*(?:\?|$)/;
const WRITE_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];
const MULTI_STATUS = 207;
const FAILED_DEPENDENCY = 424;

// The package's parts, as its own server puts them together (lib/index.js).
const require = createRequire(import.meta.url);
const { default: Account } = require('@vercel/cosmosdb-server/lib/account/index.js') as { default: new (host: string, port: number) => ServerAccount };
const { default: routes } = require('@vercel/cosmosdb-server/lib/routes.js') as {
  default: (request: IncomingMessage) => [Record<string, string>, RouteHandler] | undefined;
};
const operations = require('@vercel/cosmosdb-server/lib/handler/_document-operations.js') as Record<
  string,
  (collection: ServerCollection, input: BatchOperation) => OperationResult
>;
const { parsePartitionKey } = require('@vercel/cosmosdb-server/lib/utils/get-partition-from-header.js') as {
  parsePartitionKey: (value: unknown, id: string) => unknown;
};
const { default: readJson } = require('@vercel/cosmosdb-server/lib/json.js') as { default: (request: IncomingMessage) => Promise<unknown> };

type ServerDocument = StoredDocument & { _rid: string; _etag: string; _ts: number };
interface ServerDocuments {
  upsert(document: StoredDocument): ServerDocument;
  delete(id: string, partition: unknown): void;
  _set(document: ServerDocument): ServerDocument;
  _getPartition(document: object): unknown;
  _data: Map<string, { read(): ServerDocument }>;
}
interface ServerCollection {
  read(): { partitionKey?: { paths?: string[] } } | undefined;
  document(id: string, partition: unknown): { read(): ServerDocument | undefined };
  documents: ServerDocuments;
}
interface ServerAccount {
  database(id: string): { collection(id: string): ServerCollection };
}
type RouteHandler = (account: ServerAccount, request: IncomingMessage, response: ServerResponse, params: Record<string, string>) => unknown;
interface BatchOperation {
  operationType: string;
  id?: string;
  partitionKey?: string;
  ifMatch?: string;
  resourceBody?: StoredDocument;
}
interface OperationResult {
  statusCode: number;
  body?: ServerDocument;
}

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

const isTrue = (header: string | string[] | undefined) => [header].flat().some((value) => value?.toLowerCase() === 'true');

/** The database, container and (for a single document) id a documents request names. */
function documentsPath(request: IncomingMessage): { database: string; container: string; id: string | undefined } | undefined {
  const match = DOCUMENTS_PATH.exec(request.url ?? '');
  if (!match) return undefined;
  try {
    const [database, container, id] = match.slice(1).map((segment) => segment && decodeURIComponent(segment));
    return { database: database!, container: container!, id };
  } catch {
    return undefined; // the server cannot route it either
  }
}

function isWrite(request: IncomingMessage): boolean {
  if (!WRITE_METHODS.includes(request.method ?? '') || isTrue(request.headers['x-ms-documentdb-isquery'])) return false;
  return request.headers['content-type'] !== 'application/query+json';
}

const isAtomicBatch = (request: IncomingMessage) =>
  request.method === 'POST' && isTrue(request.headers['x-ms-cosmos-is-batch-request']) && isTrue(request.headers['x-ms-cosmos-batch-atomic']);

/** A value as one level of a partition key holds it. */
const keyPart = (value: unknown) => (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : null);

function withoutSystemProperties(document: StoredDocument): StoredDocument {
  return Object.fromEntries(Object.entries(document).filter(([name]) => !SYSTEM_PROPERTIES.includes(name))) as StoredDocument;
}

/**
 * A transactional batch as Cosmos runs one: in order, and all or nothing. Each operation is applied as
 * the package applies it; when one fails, those applied before it are undone, the failed one answers
 * its status, every other one 424, and the batch 207.
 */
function runAtomicBatch(collection: ServerCollection, batch: BatchOperation[]): { status: number; results: unknown[] } {
  const undo: (() => void)[] = [];
  const results: unknown[] = [];
  const documents = collection.documents;
  for (const [index, operation] of batch.entries()) {
    const type = operation?.operationType;
    const run = {
      Create: operations.createOperation,
      Upsert: operations.upsertOperation,
      Read: operations.readOperation,
      Delete: operations.deleteOperation,
      Replace: operations.replaceOperation,
    }[type ?? ''];
    if (!run) return { status: 400, results: [{ message: `Operation type '${type}' is not supported in Batch.` }] };
    const id = operation.id ?? operation.resourceBody?.id;
    const partition = type === 'Create' ? undefined : id && parsePartitionKey(operation.partitionKey, id);
    const before = partition === undefined || !id ? undefined : collection.document(id, partition).read();
    const result = run(collection, operation);
    if (result.statusCode >= 400) {
      for (const step of undo.reverse()) step();
      const failed = batch.map((_, other) => ({ statusCode: other === index ? result.statusCode : FAILED_DEPENDENCY, requestCharge: 0 }));
      return { status: MULTI_STATUS, results: failed };
    }
    const after = result.body;
    if (type !== 'Read') {
      undo.push(() => {
        if (after) documents.delete(after.id, documents._getPartition(after));
        if (before) documents._set(before);
      });
    }
    results.push({ statusCode: result.statusCode, requestCharge: 1, eTag: after?._etag, resourceBody: after });
  }
  return { status: 200, results };
}

/** A partition key as the client sends it (`["t1"]`, or `["t1","p1"]` for a hierarchical key), as the values of each level. */
function partitionKeyValue(sent: unknown): PartitionKeyValue {
  let parsed: unknown;
  try {
    parsed = typeof sent === 'string' ? JSON.parse(sent) : sent;
  } catch {
    return [];
  }
  return [parsed].flat().map(keyPart);
}

interface Deleted {
  id: string;
  partitionKey: PartitionKeyValue;
}

/** What a successful write changed: the documents as they now are, and those deleted. */
function changesOf(
  request: IncomingMessage,
  id: string | undefined,
  body: unknown,
  batch: BatchOperation[] | undefined,
): { put: ServerDocument[]; deleted: Deleted[] } {
  if (request.method === 'DELETE')
    return { put: [], deleted: id ? [{ id, partitionKey: partitionKeyValue(request.headers['x-ms-documentdb-partitionkey']) }] : [] };
  if (!batch) return { put: [body as ServerDocument], deleted: [] };
  const results = body as { statusCode: number; resourceBody?: ServerDocument }[];
  const put: ServerDocument[] = [];
  const deleted: Deleted[] = [];
  results.forEach((result, index) => {
    const operation = batch[index];
    if (!operation || result.statusCode >= 400 || operation.operationType === 'Read') return;
    if (operation.operationType === 'Delete') deleted.push({ id: operation.id!, partitionKey: partitionKeyValue(operation.partitionKey) });
    else if (result.resourceBody) put.push(result.resourceBody);
  });
  return { put, deleted };
}

export async function startCosmosEmulator(options: CosmosEmulatorOptions) {
  installQueryShortcuts();
  // The app's containers, whose documents the journal keeps.
  const appContainers = new Set<string>(Object.values(CONTAINERS).map((definition) => definition.id));
  // First, as it may refuse a damaged journal.
  const opened = options.dataDir
    ? await DocumentStore.open({ folder: options.dataDir, documents: keptDocuments, compactAfterBytes: options.compactAfterBytes })
    : undefined;
  const store = opened?.store;
  // What the app costs the database: data requests and the request units they report, and apart from
  // them the query-plan lookups the SDK sends alongside each query (Azure's gateway answers those, for no RUs),
  // and the change feed trigger's own traffic: its reads of the feed, and its leases, which it renews
  // every few seconds whatever the app does. Patches are also counted on their own: the app sends them
  // in the background (reserving ids ahead).
  const counts = { requests: 0, requestCharge: 0, queryPlans: 0, patches: 0, changeFeedReads: 0, leaseRequests: 0 };
  const serverOptions: ServerOptions = { cert: options.tls.cert, key: options.tls.key, keepAlive: true };
  const server = keepIdleConnectionsOpen(createServer(serverOptions, (request, response) => void serve(request, response)));
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.headers['x-ms-cosmos-is-query-plan-request']) {
      counts.queryPlans += 1;
      return;
    }
    if (isChangeFeedRequest(request)) {
      counts.changeFeedReads += 1;
      return;
    }
    if (documentsPath(request)?.container === CONTAINERS.leases.id) {
      counts.leaseRequests += 1;
      return;
    }
    counts.requests += 1;
    if (request.method === 'PATCH') counts.patches += 1;
    response.on('finish', () => (counts.requestCharge += Number(response.getHeader('x-ms-request-charge') ?? 0)));
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  // Made once the server listens: the package's account names its own address.
  const account = new Account(options.host, port);
  const feeds = new Map<string, ContainerFeed>();
  const feedOf = (database: string, container: string) => {
    const key = JSON.stringify([database, container]);
    let feed = feeds.get(key);
    if (!feed) feeds.set(key, (feed = new ContainerFeed()));
    return feed;
  };

  /** A document's full partition key value, from its container's key paths. */
  function partitionKeyOf(collection: ServerCollection, document: StoredDocument): PartitionKeyValue {
    const paths = collection.read()?.partitionKey?.paths ?? ['/id'];
    return paths.map((path) => {
      let value: unknown = document;
      for (const name of path.slice(1).split('/')) value = (value as Record<string, unknown> | undefined)?.[name];
      return keyPart(value);
    });
  }
  // The server keys a document by its id and the first level of its partition key.
  const keyOf = (id: string, partition: unknown) => JSON.stringify([id, partition]);
  const changed = (collection: ServerCollection, document: StoredDocument): ChangedDocument => {
    const partition = collection.documents._getPartition(document);
    return { key: keyOf(document.id, partition), partitionKey: partitionKeyOf(collection, document), find: { partition, id: document.id } };
  };

  /** The app's documents as they now are, each with the LSN of its latest change: what a snapshot keeps. */
  function keptDocuments(): Documents {
    const kept: Documents = {};
    for (const container of appContainers) {
      const { documents } = account.database(options.database).collection(container);
      const feed = feedOf(options.database, container);
      kept[container] = [...documents._data.values()].map((item) => {
        const document = item.read();
        return { ...withoutSystemProperties(document), _lsn: feed.lsnOf(keyOf(document.id, documents._getPartition(document))) };
      });
    }
    return kept;
  }

  /** Answers as the package's server does, once what the answer reflects is durable. */
  async function answer(request: IncomingMessage, response: ServerResponse, body: unknown, durable: Promise<void> | undefined): Promise<void> {
    if (response.statusCode > 399 && body && typeof body === 'object' && !('message' in body)) (body as { message: string }).message = '';
    if (body && typeof body === 'object' && '_etag' in body) response.setHeader('etag', String(body._etag));
    response.setHeader('content-type', 'application/json');
    response.setHeader('content-location', `https://${request.headers.host}${request.url}`);
    response.setHeader('connection', 'keep-alive');
    response.setHeader('x-ms-activity-id', randomUUID());
    response.setHeader('x-ms-request-charge', '1');
    if (durable) {
      try {
        await durable;
      } catch (error) {
        // Never acknowledge what is not on disk: the client sees the write fail.
        response.statusCode = 503;
        response.removeHeader('etag');
        body = { code: 'ServiceUnavailable', message: (error as Error).message };
      }
    }
    response.end(JSON.stringify(body));
  }

  /** The change feed of a container, read from its log; the documents as they are now. */
  function serveChangeFeed(request: IncomingMessage, response: ServerResponse, path: { database: string; container: string }): unknown {
    const collection = account.database(path.database).collection(path.container);
    if (!collection.read()) {
      response.statusCode = 404;
      return { code: 'NotFound', message: 'The container does not exist' };
    }
    const asked = feedRequest(request);
    if (typeof asked === 'string') {
      response.statusCode = 400;
      return { code: 'BadRequest', message: asked };
    }
    const page = feedOf(path.database, path.container).read(asked, ({ id, partition }) => collection.document(id, partition).read());
    response.setHeader('etag', `"${page.continuation}"`);
    if (page.documents.length === 0) {
      response.statusCode = 304;
      return {};
    }
    response.setHeader('x-ms-item-count', String(page.documents.length));
    return { _rid: '', Documents: page.documents, _count: page.documents.length };
  }

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = documentsPath(request);
    let body: unknown;
    let batch: BatchOperation[] | undefined;
    try {
      if (path && isChangeFeedRequest(request)) body = serveChangeFeed(request, response, path);
      else if (path && isAtomicBatch(request)) {
        const parsed = await readJson(request);
        if (!Array.isArray(parsed)) {
          response.statusCode = 400;
          body = { message: 'Invalid request body' };
        } else {
          const collection = account.database(path.database).collection(path.container);
          if (!collection.read()) {
            response.statusCode = 404;
            body = {};
          } else {
            // An operation that names no partition key is in the batch's.
            const header = request.headers['x-ms-documentdb-partitionkey'];
            batch = (parsed as BatchOperation[]).map((operation) => ({
              ...operation,
              partitionKey: operation?.partitionKey ?? (typeof header === 'string' ? header : undefined),
            }));
            const { status, results } = runAtomicBatch(collection, batch);
            response.statusCode = status;
            body = results;
          }
        }
      } else {
        const route = routes(request);
        if (route) body = await route[1](account, request, response, route[0]);
        else {
          response.statusCode = 400;
          body = { message: 'no route' };
        }
      }
    } catch (error) {
      console.error(error);
      response.statusCode = 500;
      body = { message: (error as Error).message };
    }
    const succeeded = response.statusCode >= 200 && response.statusCode < 300;
    if (!path || !isWrite(request) || !succeeded || isChangeFeedRequest(request)) return answer(request, response, body, store?.settled());
    const collection = account.database(path.database).collection(path.container);
    const { put, deleted } = changesOf(request, path.id, body, batch);
    const feed = feedOf(path.database, path.container);
    const lsn = feed.record(
      put.map((document) => changed(collection, document)),
      deleted.map(({ id, partitionKey }) => keyOf(id, partitionKey[0] ?? id)),
    );
    const effects: Effect[] = [
      ...deleted.map(({ id, partitionKey }) => ({ container: path.container, delete: { partitionKey, id } })),
      ...put.map((document) => ({ container: path.container, put: { ...withoutSystemProperties(document), _lsn: lsn } })),
    ];
    const kept = store && path.database === options.database && appContainers.has(path.container) && effects.length > 0;
    const durable = (kept ? store.record(effects) : (store?.settled() ?? Promise.resolve())).then(() => feed.publish(lsn));
    return answer(request, response, body, durable);
  }

  const endpoint = `https://${options.host}:${port}/`;
  const agent = new Agent({ ca: options.tls.cert, keepAlive: true });
  const client = new CosmosClient({ endpoint, key: EMULATOR_KEY, agent });

  const { database } = await client.databases.createIfNotExists({ id: options.database });
  for (const definition of Object.values(CONTAINERS)) await database.containers.createIfNotExists(definition);

  /** Replays the kept writes into the server and the change feeds; answers how many documents there are. */
  function restore(kept: Effect[]): number {
    const touched = new Set<ContainerFeed>();
    for (const effect of kept.filter(({ container }) => appContainers.has(container))) {
      const collection = account.database(options.database).collection(effect.container);
      const feed = feedOf(options.database, effect.container);
      touched.add(feed);
      if ('put' in effect) {
        const { _lsn, ...fields } = effect.put;
        feed.restore({ document: changed(collection, collection.documents.upsert(fields)), lsn: typeof _lsn === 'number' ? _lsn : undefined });
      } else {
        const { id, partitionKey } = effect.delete;
        const partition = partitionKey[0] ?? id;
        if (collection.document(id, partition).read()) collection.documents.delete(id, partition);
        feed.restore({ removed: keyOf(id, partition) });
      }
    }
    for (const feed of touched) feed.restored();
    return [...appContainers].reduce((sum, container) => sum + account.database(options.database).collection(container).documents._data.size, 0);
  }
  const restored = opened ? restore(opened.kept) : 0;

  return {
    counts,
    endpoint,
    key: EMULATOR_KEY,
    /** What the app's COSMOS_CONNECTION setting holds for this store. */
    connectionString: `AccountEndpoint=${endpoint};AccountKey=${EMULATOR_KEY};`,
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
