/**
 * The embedded Cosmos DB (docs/local-stack.md): @vercel/cosmosdb-server's account and routes behind an
 * HTTPS front of ours, spoken to by the real @azure/cosmos client. The front adds what the package lacks
 * and Azure has: the change feed (local/cosmos-change-feed.ts), atomic transactional batches, and writes
 * made durable (local/cosmos-disk.ts) before they are answered and shown in the change feed.
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
import { DocumentStore, type Effect, type Kept, type PartitionKeyValue, type StoredDocument } from './cosmos-disk.js';
import { keepIdleConnectionsOpen } from './idle-connections.js';

// The emulator checks no signatures; the client still needs a well-formed base64 key.
export const EMULATOR_KEY = Buffer.from('local-cosmos-emulator-key').toString('base64');
// Set by the server on each document; it sets them anew when a document is loaded at start.
const SYSTEM_PROPERTIES = ['_rid', '_self', '_etag', '_ts', '_attachments'];
// A documents request, as the server routes it: /dbs/{database}/colls/{container}/docs[/{id}].
const DOCUMENTS_PATH = /^\/+dbs\/([^/?]+)\/colls\/([^/?]+)\/docs(?:\/([^/?]+))?\/*(?:\?|$)/;
const WRITE_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'];
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
/** The operations a batch may hold. */
const BATCH_OPERATIONS = new Map(['Create', 'Upsert', 'Read', 'Delete', 'Replace'].map((type) => [type, operations[`${type.toLowerCase()}Operation`]!]));
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
/** What a successful write changed, in order: each document as it now is, or as it was when deleted. */
type Changes = { document: ServerDocument; deleted: boolean }[];
type BatchOutcome = { status: number; results: unknown; changes?: Changes };

export interface CosmosEmulatorOptions {
  port: number;
  host: string;
  database: string;
  tls: { cert: string; key: string };
  /** Where the documents are kept between runs; without it they live only as long as the process. */
  dataDir?: string;
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

const isBatch = (request: IncomingMessage) => request.method === 'POST' && isTrue(request.headers['x-ms-cosmos-is-batch-request']);

function withoutSystemProperties(document: StoredDocument): StoredDocument {
  return Object.fromEntries(Object.entries(document).filter(([name]) => !SYSTEM_PROPERTIES.includes(name))) as StoredDocument;
}

/** A document's full partition key value, from its container's key paths. */
function partitionKeyAt(paths: string[], document: StoredDocument): PartitionKeyValue {
  return paths.map((path) => {
    let value: unknown = document;
    for (const name of path.slice(1).split('/')) value = (value as Record<string, unknown> | undefined)?.[name];
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : null;
  });
}

/**
 * A batch as Cosmos runs one: each operation in order, as the package applies it. An atomic (transactional)
 * batch is all or nothing: when an operation fails, those before it are undone, it answers its status,
 * every other one 424, and the batch 207. A bulk one goes on after a failure only when asked to.
 */
function runBatch(collection: ServerCollection, batch: BatchOperation[], atomic: boolean, continueOnError: boolean): BatchOutcome {
  const types = batch.map((operation) => operation?.operationType);
  const unsupported = types.findIndex((type) => !BATCH_OPERATIONS.has(type));
  if (unsupported >= 0) return { status: 400, results: { message: `Operation type '${types[unsupported]}' is not supported in Batch.` } };
  const undo: (() => void)[] = [];
  const results: unknown[] = [];
  const changes: Changes = [];
  const documents = collection.documents;
  for (const [index, operation] of batch.entries()) {
    const id = operation.id ?? operation.resourceBody?.id;
    const partition = operation.operationType === 'Create' ? undefined : id && parsePartitionKey(operation.partitionKey, id);
    const before = partition === undefined || !id ? undefined : collection.document(id, partition).read();
    const result = BATCH_OPERATIONS.get(operation.operationType)!(collection, operation);
    const after = result.body;
    if (result.statusCode >= 400 && atomic) {
      for (const step of undo.reverse()) step();
      const failed = batch.map((_, other) => ({ statusCode: other === index ? result.statusCode : FAILED_DEPENDENCY, requestCharge: 0 }));
      return { status: 207, results: failed };
    }
    if (result.statusCode >= 400) {
      results.push({ statusCode: result.statusCode, requestCharge: 0 });
      if (continueOnError) continue;
      results.push(...batch.slice(index + 1).map(() => ({ statusCode: FAILED_DEPENDENCY, requestCharge: 0 })));
      break;
    }
    if (operation.operationType !== 'Read') {
      if (after) changes.push({ document: after, deleted: false });
      else if (before) changes.push({ document: before, deleted: true });
      undo.push(() => {
        if (after) documents.delete(after.id, documents._getPartition(after));
        if (before) documents._set(before);
      });
    }
    results.push({ statusCode: result.statusCode, requestCharge: 1, eTag: after?._etag, resourceBody: after });
  }
  return { status: 200, results, changes };
}

export async function startCosmosEmulator(options: CosmosEmulatorOptions) {
  installQueryShortcuts();
  // The app's containers, whose documents are kept on disk, with their partition key paths.
  const appContainers = new Map<string, string[]>(Object.values(CONTAINERS).map((definition) => [definition.id, definition.partitionKey.paths]));
  // First, as it may refuse an older version's folder.
  const opened = options.dataDir
    ? await DocumentStore.open(options.dataDir, (container, document) => partitionKeyAt(appContainers.get(container)!, document))
    : undefined;
  const store = opened?.store;
  // What the app costs the database: data requests and the request units they report; apart from them,
  // the query-plan lookups the SDK sends with each query (Azure's gateway answers those, for no RUs) and the
  // change feed trigger's reads of the feed; its leases, renewed every few seconds whatever the app does, not at
  // all. Patches are also counted on their own: the app sends them in the background (reserving ids ahead).
  const counts = { requests: 0, requestCharge: 0, queryPlans: 0, patches: 0, changeFeedReads: 0 };
  const serverOptions: ServerOptions = { cert: options.tls.cert, key: options.tls.key, keepAlive: true };
  const server = keepIdleConnectionsOpen(createServer(serverOptions, (request, response) => void serve(request, response)));
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.headers['x-ms-cosmos-is-query-plan-request']) counts.queryPlans += 1;
    else if (isChangeFeedRequest(request)) counts.changeFeedReads += 1;
    else if (documentsPath(request)?.container !== CONTAINERS.leases.id) {
      counts.requests += 1;
      if (request.method === 'PATCH') counts.patches += 1;
      response.on('finish', () => (counts.requestCharge += Number(response.getHeader('x-ms-request-charge') ?? 0)));
    }
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  // Made once the server listens: the package's account names its own address.
  const account = new Account(options.host, port);
  // A container's feed goes with its documents: a container made again under the same id starts a new one.
  const feeds = new WeakMap<ServerDocuments, ContainerFeed>();
  const feedOf = ({ documents }: ServerCollection) => {
    let feed = feeds.get(documents);
    if (!feed) feeds.set(documents, (feed = new ContainerFeed()));
    return feed;
  };
  // The server keys a document by its id and the first level of its partition key.
  const keyOf = (collection: ServerCollection, document: StoredDocument) => JSON.stringify([document.id, collection.documents._getPartition(document)]);
  const changed = (collection: ServerCollection, document: StoredDocument): ChangedDocument => ({
    key: keyOf(collection, document),
    partitionKey: partitionKeyAt(collection.read()?.partitionKey?.paths ?? ['/id'], document),
    find: { partition: collection.documents._getPartition(document), id: document.id },
  });
  const appCollection = (container: string) => account.database(options.database).collection(container);

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
  function serveChangeFeed(request: IncomingMessage, response: ServerResponse, collection: ServerCollection): unknown {
    if (!collection.read()) {
      response.statusCode = 404;
      return { code: 'NotFound', message: 'The container does not exist' };
    }
    const asked = feedRequest(request);
    if (typeof asked === 'string') {
      response.statusCode = 400;
      return { code: 'BadRequest', message: asked };
    }
    const page = feedOf(collection).read(asked, ({ id, partition }) => collection.document(id, partition).read());
    response.setHeader('etag', `"${page.continuation}"`);
    if (page.documents.length === 0) {
      response.statusCode = 304;
      return {};
    }
    response.setHeader('x-ms-item-count', String(page.documents.length));
    return { _rid: '', Documents: page.documents, _count: page.documents.length };
  }

  /** A batch request's operations, in the batch's partition key unless they name their own, run. */
  async function serveBatch(request: IncomingMessage, collection: ServerCollection): Promise<BatchOutcome> {
    const batch = await readJson(request);
    if (!collection.read()) return { status: 404, results: {} };
    if (!Array.isArray(batch)) return { status: 400, results: { message: 'Invalid request body' } };
    const header = request.headers['x-ms-documentdb-partitionkey'];
    const operations = (batch as BatchOperation[]).map((operation) => ({
      ...operation,
      partitionKey: operation?.partitionKey ?? (typeof header === 'string' ? header : undefined),
    }));
    const atomic = isTrue(request.headers['x-ms-cosmos-batch-atomic']);
    return runBatch(collection, operations, atomic, isTrue(request.headers['x-ms-cosmos-batch-continue-on-error']));
  }

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = documentsPath(request);
    const collection = path && account.database(path.database).collection(path.container);
    let body: unknown;
    let changes: Changes | undefined;
    try {
      const route = routes(request);
      if (collection && isChangeFeedRequest(request)) body = serveChangeFeed(request, response, collection);
      else if (collection && isBatch(request)) {
        const ran = await serveBatch(request, collection);
        [response.statusCode, body, changes] = [ran.status, ran.results, ran.changes];
      } else if (route) {
        // The document a delete removes, read first: the server's handler deletes it at once.
        const partitionKey = request.headers['x-ms-documentdb-partitionkey'];
        const doomed = request.method === 'DELETE' && path?.id ? collection!.document(path.id, parsePartitionKey(partitionKey, path.id)).read() : undefined;
        body = await route[1](account, request, response, route[0]);
        if (collection && isWrite(request)) changes = doomed ? [{ document: doomed, deleted: true }] : [{ document: body as ServerDocument, deleted: false }];
      } else {
        response.statusCode = 400;
        body = { message: 'no route' };
      }
    } catch (error) {
      console.error(error);
      response.statusCode = 500;
      body = { message: (error as Error).message };
    }
    const succeeded = response.statusCode >= 200 && response.statusCode < 300;
    if (!path || !collection || !changes || !succeeded) return answer(request, response, body, store?.settled());
    // A document that a batch wrote more than once is as its last operation left it.
    const last = [...new Map(changes.map((change) => [keyOf(collection, change.document), change])).values()];
    const feed = feedOf(collection);
    const lsn = feed.record(
      last.filter(({ deleted }) => !deleted).map(({ document }) => changed(collection, document)),
      last.filter(({ deleted }) => deleted).map(({ document }) => keyOf(collection, document)),
    );
    const effects: Effect[] = last.map(({ document, deleted }) =>
      deleted ? { container: path.container, delete: document } : { container: path.container, put: { ...withoutSystemProperties(document), _lsn: lsn } },
    );
    const kept = store && path.database === options.database && appContainers.has(path.container) && effects.length > 0;
    const durable = (kept ? store.record(effects) : (store?.settled() ?? Promise.resolve())).then(() => feed.publish(lsn));
    return answer(request, response, body, durable);
  }

  const endpoint = `https://${options.host}:${port}/`;
  const agent = new Agent({ ca: options.tls.cert, keepAlive: true });
  const client = new CosmosClient({ endpoint, key: EMULATOR_KEY, agent });

  const { database } = await client.databases.createIfNotExists({ id: options.database });
  for (const definition of Object.values(CONTAINERS)) await database.containers.createIfNotExists(definition);

  /** Loads the kept documents into the server and the change feeds, in the order of their changes; answers how many. */
  function restore(kept: Kept[]): number {
    // One kept before LSNs were comes after the others.
    const lsnOf = (document: StoredDocument) => (typeof document._lsn === 'number' ? document._lsn : Number.POSITIVE_INFINITY);
    const touched = new Set<ContainerFeed>();
    for (const { container, document } of kept.sort((a, b) => lsnOf(a.document) - lsnOf(b.document))) {
      const collection = appCollection(container);
      const feed = feedOf(collection);
      touched.add(feed);
      const { _lsn, ...fields } = document;
      feed.restore(changed(collection, collection.documents.upsert(fields)), lsnOf(document));
    }
    for (const feed of touched) feed.restored();
    return kept.length;
  }
  const restored = opened ? restore(opened.kept) : 0;

  return {
    counts,
    endpoint,
    key: EMULATOR_KEY,
    /** What the app's COSMOS_CONNECTION setting holds for this store. */
    connectionString: `AccountEndpoint=${endpoint};AccountKey=${EMULATOR_KEY};`,
    restored,
    client,
    async close(): Promise<void> {
      client.dispose();
      agent.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Answers still waiting for the disk are released as their writes land.
      await store?.close();
      await closed;
    },
  };
}

export type CosmosEmulator = Awaited<ReturnType<typeof startCosmosEmulator>>;
