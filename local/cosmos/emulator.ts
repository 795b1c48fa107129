/**
 * The embedded Cosmos DB (docs/local-stack.md): @vercel/cosmosdb-server's account and routes behind an HTTPS front
 * of ours, which adds what Azure has and the package lacks: the change feed, atomic batches, and writes made durable
 * (local/cosmos/disk.ts) before they are answered or shown in the change feed.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, createServer } from 'node:https';
import { createRequire } from 'node:module';
import { CosmosClient } from '@azure/cosmos';
import { CONTAINERS } from '../../shared/data/containers.js';
import { ContainerFeed, feedRequest, type ChangedDocument } from './change-feed.js';
import { installQueryShortcuts } from './query-shortcuts.js';
import { DocumentStore, type Kept, type PartitionKeyValue, type StoredDocument } from './disk.js';
import { keepIdleConnectionsOpen, listen } from '../embedded-http.js';
import { checkEntraToken, TokenCheckFailed, type ExpectedToken } from '../identity/entra-token.js';

// The emulator checks no master-key signatures; the client still needs a well-formed base64 key.
export const EMULATOR_KEY = Buffer.from('local-cosmos-emulator-key').toString('base64');
const FAILED_DEPENDENCY = 424;

// The package's parts, as its own server puts them together (lib/index.js).
const require = createRequire(import.meta.url);
const lib = <T>(path: string) => require(`@vercel/cosmosdb-server/lib/${path}.js`) as T;
const { default: Account } = lib<{ default: new (host: string, port: number) => ServerAccount }>('account/index');
const { default: routes } = lib<{ default: (request: IncomingMessage) => [RouteParams, RouteHandler] | undefined }>('routes');
const { default: readJson } = lib<{ default: (request: IncomingMessage) => Promise<unknown> }>('json');
const { parsePartitionKey } = lib<{ parsePartitionKey: (value: unknown, id: string) => unknown }>('utils/get-partition-from-header');
type BatchOperationRunner = (collection: ServerCollection, input: BatchOperation) => { statusCode: number; body?: ServerDocument };
const operations = lib<Record<string, BatchOperationRunner>>('handler/_document-operations');
const { patchOperation } = lib<{ patchOperation: BatchOperationRunner }>('handler/_patch-operations');
/** A patch in a batch: its body the operations, or the operations and a condition (`FROM c WHERE …`, checked as the patched package does). */
const batchPatch: BatchOperationRunner = (collection, { resourceBody, ...input }) =>
  patchOperation(collection, { ...input, ...(Array.isArray(resourceBody) ? { operations: resourceBody } : resourceBody) });
/** The operations a batch may hold. */
const BATCH_OPERATIONS = new Map<string, BatchOperationRunner>([
  ...['Create', 'Upsert', 'Read', 'Delete', 'Replace'].map((type): [string, BatchOperationRunner] => [type, operations[`${type.toLowerCase()}Operation`]!]),
  ['Patch', batchPatch],
]);
const handler = (name: string) => lib<{ default: RouteHandler }>(`handler/${name}`).default;
const [readDocuments, batchDocuments, deleteDocument] = ['read-documents', 'batch-documents', 'delete-document'].map(handler);
/** The handlers that write one document. */
const DOCUMENT_WRITES = new Set(['create-document', 'upsert-document', 'replace-document', 'patch-document', 'delete-document'].map(handler));

type ServerDocument = StoredDocument & { _rid: string; _etag: string; _ts: number };
interface ServerCollection {
  read(): { partitionKey?: { paths?: string[] } } | undefined;
  document(id: string, partition: unknown): { read(): ServerDocument | undefined };
  documents: {
    upsert(document: StoredDocument): ServerDocument;
    delete(id: string, partition: unknown): void;
    _set(document: ServerDocument): ServerDocument;
    _getPartition(document: object): unknown;
    _purge(): ServerDocument[];
    _ridCount: number;
    /** Ours: the container's change feed goes with its documents, so a container made again under its id starts a new one. */
    changeFeed?: ContainerFeed;
  };
}
interface ServerAccount {
  database(id: string): { collection(id: string): ServerCollection };
}
type RouteParams = { dbId?: string; collId?: string; docId?: string };
type RouteHandler = (account: unknown, request: IncomingMessage, response: ServerResponse, params: RouteParams) => unknown;
interface BatchOperation {
  operationType: string;
  id?: string;
  partitionKey?: string;
  ifMatch?: string;
  resourceBody?: StoredDocument;
}
/** What a successful write changed, in order: each document as it was before and as it is after (none: deleted). */
type Changes = { before?: ServerDocument; after?: ServerDocument }[];

export interface CosmosEmulatorOptions {
  port: number;
  host: string;
  database: string;
  tls: { cert: string; key: string };
  /** Where the documents are kept between runs; without it they live only as long as the process. */
  dataDir?: string;
  /** The identity provider whose Entra tokens (`type=aad`) it takes, of the account's tenant only; without it, none. */
  entra?: Required<Pick<ExpectedToken, 'keys' | 'authorityHost' | 'tenantId'>>;
  /** How often, in milliseconds, it purges the documents past their time to live: each minute unless given (tests give less). */
  purgeInterval?: number;
}

const isTrue = (header: string | string[] | undefined) => [header].flat().some((value) => value?.toLowerCase() === 'true');

/** A document's full partition key value, from its container's key paths. */
function partitionKeyAt(paths: string[], document: StoredDocument): PartitionKeyValue {
  return paths.map((path) => {
    let value: unknown = document;
    for (const name of path.slice(1).split('/')) value = (value as Record<string, unknown> | undefined)?.[name];
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : null;
  });
}

const changed = (collection: ServerCollection, document: StoredDocument): ChangedDocument => ({
  id: document.id,
  partition: collection.documents._getPartition(document),
  partitionKey: partitionKeyAt(collection.read()?.partitionKey?.paths ?? ['/id'], document),
});

const feedOf = ({ documents }: ServerCollection) => (documents.changeFeed ??= new ContainerFeed());

/** The change feed of a container that exists, read from its log; the documents as they are now. */
function serveChangeFeed(request: IncomingMessage, response: ServerResponse, collection: ServerCollection): unknown {
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

/**
 * A batch request as Cosmos runs one, each operation as the package applies it: an atomic (transactional) one all or
 * nothing (the failing operation's status, the others 424, the batch 207), a bulk one going on after a failure if asked.
 */
async function serveBatch(request: IncomingMessage, collection: ServerCollection): Promise<{ status: number; results: unknown; changes?: Changes }> {
  const batch = await readJson(request);
  if (!collection.read()) return { status: 404, results: {} };
  if (!Array.isArray(batch)) return { status: 400, results: { message: 'Invalid request body' } };
  const types = batch.map((operation: BatchOperation | null) => operation?.operationType);
  const unsupported = types.findIndex((type) => !BATCH_OPERATIONS.has(type!));
  if (unsupported >= 0) return { status: 400, results: { message: `Operation type '${types[unsupported]}' is not supported in Batch.` } };
  const header = request.headers['x-ms-documentdb-partitionkey'];
  const results: unknown[] = [];
  const changes: Changes = [];
  for (const [index, given] of (batch as BatchOperation[]).entries()) {
    const operation = { ...given, partitionKey: given.partitionKey ?? (typeof header === 'string' ? header : undefined) };
    const id = operation.id ?? operation.resourceBody?.id;
    const partition = operation.operationType === 'Create' ? undefined : id && parsePartitionKey(operation.partitionKey, id);
    const before = partition === undefined || !id ? undefined : collection.document(id, partition).read();
    const result = BATCH_OPERATIONS.get(operation.operationType)!(collection, operation);
    const after = result.body;
    if (result.statusCode >= 400 && isTrue(request.headers['x-ms-cosmos-batch-atomic'])) {
      for (const { before, after } of changes.reverse()) {
        if (after) collection.documents.delete(after.id, collection.documents._getPartition(after));
        if (before) collection.documents._set(before);
      }
      const failed = batch.map((_, other) => ({ statusCode: other === index ? result.statusCode : FAILED_DEPENDENCY, requestCharge: 0 }));
      return { status: 207, results: failed };
    }
    if (result.statusCode >= 400) {
      results.push({ statusCode: result.statusCode, requestCharge: 0 });
      if (isTrue(request.headers['x-ms-cosmos-batch-continue-on-error'])) continue;
      results.push(...batch.slice(index + 1).map(() => ({ statusCode: FAILED_DEPENDENCY, requestCharge: 0 })));
      break;
    }
    if (operation.operationType !== 'Read') changes.push({ before, after });
    results.push({ statusCode: result.statusCode, requestCharge: 1, eTag: after?._etag, resourceBody: after });
  }
  return { status: 200, results, changes };
}

export async function startCosmosEmulator(options: CosmosEmulatorOptions) {
  installQueryShortcuts();
  // The app's containers, whose documents are kept on disk, with their partition key paths.
  const appContainers = new Map<string, string[]>(Object.values(CONTAINERS).map((definition) => [definition.id, definition.partitionKey.paths]));
  const opened = options.dataDir
    ? await DocumentStore.open(options.dataDir, (container, document) => partitionKeyAt(appContainers.get(container)!, document))
    : undefined;
  const store = opened?.store;
  // What the app costs the database: data requests and the request units they report (1 each, as `answer` says);
  // apart from them, the query-plan lookups the SDK sends with each query (Azure's gateway answers those, for no RUs)
  // and the change feed trigger's reads of the feed; its leases, renewed every few seconds whatever the app does, not
  // at all. Patches are also counted on their own: on a create, they are its id reservations (one per 20 creates).
  const counts = { requests: 0, requestCharge: 0, queryPlans: 0, patches: 0, changeFeedReads: 0 };
  const entraClients = new Set<string>();
  const server = keepIdleConnectionsOpen(createServer({ ...options.tls, keepAlive: true }, (request, response) => void serve(request, response)));
  const port = await listen(server, options.port, options.host, 'embedded Cosmos DB');
  // Made once the server listens: the package's account names its own address.
  const account = new Account(options.host, port);
  const endpoint = `https://${options.host}:${port}/`;
  // The Entra audiences it takes: the SDK asks for the account's own scope; Cosmos DB takes the global one too.
  const audiences = [endpoint.replace(/\/$/, ''), 'https://cosmos.azure.com'];

  /** Answers as the package's server does, once what the answer reflects is durable. */
  async function answer(request: IncomingMessage, response: ServerResponse, body: unknown, durable: Promise<void> | undefined): Promise<void> {
    if (response.statusCode > 399 && body && typeof body === 'object' && !('message' in body)) (body as { message: string }).message = '';
    if (body && typeof body === 'object' && '_etag' in body) response.setHeader('etag', String(body._etag));
    response.setHeader('content-type', 'application/json');
    response.setHeader('content-location', `https://${request.headers.host}${request.url}`);
    response.setHeader('connection', 'keep-alive');
    response.setHeader('x-ms-activity-id', randomUUID());
    response.setHeader('x-ms-request-charge', '1');
    try {
      await durable;
    } catch (error) {
      // Never acknowledge what is not on disk: the client sees the write fail.
      response.statusCode = 503;
      response.removeHeader('etag');
      body = { code: 'ServiceUnavailable', message: (error as Error).message };
    }
    response.end(JSON.stringify(body));
  }

  /** Records a request's changes in the change feed and on disk; resolves once they are durable and the feed shows them. */
  function record(collection: ServerCollection, { dbId, collId }: RouteParams, changes: Changes): Promise<void> {
    // Both in order: a document that a batch wrote more than once is as its last operation left it.
    const feed = feedOf(collection);
    const lsn = feed.record(changes.map(({ before, after }) => ({ ...changed(collection, (after ?? before)!), deleted: !after })));
    const kept = store && dbId === options.database && appContainers.has(collId!);
    const effects = changes.map(({ before, after }) => ({ container: collId!, document: { ...(after ?? before)!, _lsn: lsn }, deleted: !after }));
    return (kept ? store.record(effects) : (store?.settled() ?? Promise.resolve())).then(() => feed.publish(lsn));
  }

  /** Removes the app's documents past their time to live, as Azure does: for no request units, unseen in the change feed (as a delete is); answers how many. */
  function purge(): number {
    return [...appContainers.keys()].reduce((purged, collId) => {
      const collection = account.database(options.database).collection(collId);
      const gone = collection.documents._purge().map((before) => ({ before }));
      // A failed write is logged (local/cosmos/disk.ts); the next start purges them again.
      if (gone.length > 0) void record(collection, { dbId: options.database, collId }, gone).catch(() => undefined);
      return purged + gone.length;
    }, 0);
  }

  /** Why Cosmos DB would refuse the request's Entra token, if it has one: its tenant, signature, audience and lifetime are checked. */
  async function refusedToken(request: IncomingMessage): Promise<string | undefined> {
    const [, token] = /^type=aad&ver=1\.0&sig=(.+)$/.exec(request.headers.authorization ?? '') ?? [];
    if (!token) return undefined;
    if (!options.entra) return `Request blocked by Auth ${options.host} : no identity provider is trusted, so no AAD token is taken.`;
    try {
      entraClients.add(String((await checkEntraToken(token, { ...options.entra, audiences })).claims.appid));
    } catch (error) {
      if (!(error instanceof TokenCheckFailed)) throw error;
      const { problem, claims } = error;
      const expired = `has been expired since [${new Date(Number(claims.exp) * 1000).toUTCString()}]`;
      const intended = `is intended for [${String(claims.aud)}]. This database account accepts tokens intended for [${audiences.join(', ')}]`;
      const why = problem === 'lifetime' ? expired : problem === 'audience' ? intended : `failed its ${problem} check`;
      return `Request blocked by Auth ${options.host} : Provided AAD token ${why}.`;
    }
  }

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const refused = await refusedToken(request);
    if (refused) return answer(request, Object.assign(response, { statusCode: 401 }), { code: 'Unauthorized', message: refused }, undefined);
    const ran = await run(request, response).catch((error: unknown) => {
      console.error(error);
      response.statusCode = 500;
      return { body: { message: (error as Error).message }, durable: undefined };
    });
    return answer(request, response, ran.body, ran.durable ?? store?.settled());
  }

  /** Runs a request as the package's server does, with our change feed and atomic batches; what it wrote, once durable. */
  async function run(request: IncomingMessage, response: ServerResponse): Promise<{ body: unknown; durable?: Promise<void> }> {
    const [params, handler] = routes(request) ?? [{}];
    const changeFeed = handler === readDocuments && /incremental feed/i.test(String(request.headers['a-im'] ?? ''));
    if (request.headers['x-ms-cosmos-is-query-plan-request']) counts.queryPlans += 1;
    else if (changeFeed) counts.changeFeedReads += 1;
    else if (params.collId !== CONTAINERS.leases.id) {
      counts.requests += 1;
      counts.requestCharge += 1;
      if (request.method === 'PATCH') counts.patches += 1;
    }
    if (!handler) {
      response.statusCode = 400;
      return { body: { message: 'no route' } };
    }
    const collection = account.database(params.dbId!).collection(params.collId!);
    const written = (changes: Changes) => (response.statusCode < 300 ? record(collection, params, changes) : undefined);
    // Of a container that does not exist, the package's handler answers 404.
    if (changeFeed && collection.read()) return { body: serveChangeFeed(request, response, collection) };
    if (handler === batchDocuments) {
      const batch = await serveBatch(request, collection);
      response.statusCode = batch.status;
      return { body: batch.results, durable: batch.changes && written(batch.changes) };
    }
    // The document a delete removes, read first: the server's handler deletes it at once.
    const { docId } = params;
    const partitionKey = request.headers['x-ms-documentdb-partitionkey'];
    const doomed = handler === deleteDocument ? collection.document(docId!, parsePartitionKey(partitionKey, docId!)).read() : undefined;
    const body = await handler(account, request, response, params);
    if (!DOCUMENT_WRITES.has(handler)) return { body };
    return { body, durable: written([doomed ? { before: doomed } : { after: body as ServerDocument }]) };
  }

  const agent = new Agent({ ca: options.tls.cert, keepAlive: true });
  const client = new CosmosClient({ endpoint, key: EMULATOR_KEY, agent });

  const { database } = await client.databases.createIfNotExists({ id: options.database });
  for (const definition of Object.values(CONTAINERS)) await database.containers.createIfNotExists(definition);

  // The kept documents, loaded into the server and the change feeds in the order of their changes; one kept before
  // LSNs were comes after the others.
  const lsnOf = ({ document }: Kept) => (typeof document._lsn === 'number' ? document._lsn : Infinity);
  for (const { container, document } of opened?.kept.sort((a, b) => lsnOf(a) - lsnOf(b)) ?? []) {
    const collection = account.database(options.database).collection(container);
    const { _lsn, ...fields } = document;
    const feed = feedOf(collection);
    // As Cosmos DB keeps it: its `_rid`, after which a query's continuation goes on (made if an older snapshot lacks it), new ones
    // numbered after it (its count is the int32 at byte 8); its `_ts`, from which its time to live counts, and its `_etag`.
    const kept = fields._rid ? (fields as ServerDocument) : collection.documents.upsert(fields);
    const restored = collection.documents._set({ ...kept, _ts: fields._ts as number, _etag: fields._etag as string });
    collection.documents._ridCount = Math.max(collection.documents._ridCount, Buffer.from(restored._rid, 'base64').readInt32LE(8));
    feed.publish(feed.record([{ ...changed(collection, restored), deleted: false }], typeof _lsn === 'number' ? _lsn : undefined));
  }
  // Deletes leave no document, but a continuation may already be past them: new writes number on after them.
  for (const [container, lastLsn] of opened?.lastLsns ?? []) {
    const feed = feedOf(account.database(options.database).collection(container));
    feed.publish(feed.record([], lastLsn));
  }
  const expiredAtStart = purge();
  // Each minute, as Azure purges within minutes of expiry and a purge reads every document; not keeping the process alive.
  const purging = setInterval(purge, options.purgeInterval ?? 60_000).unref();

  return {
    counts,
    /** The client ids (appid) of the Entra tokens it took. */
    entraClients,
    endpoint,
    key: EMULATOR_KEY,
    /** What the app's COSMOS_CONNECTION setting holds for this store. */
    connectionString: `AccountEndpoint=${endpoint};AccountKey=${EMULATOR_KEY};`,
    restored: (opened?.kept.length ?? 0) - expiredAtStart,
    client,
    /** For tests: the package's account, whose containers' documents (`documents._data`) they count. */
    account,
    async close(): Promise<void> {
      clearInterval(purging);
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
