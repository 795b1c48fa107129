import { setTimeout as delay } from 'node:timers/promises';
import type { Container, JSONObject, JSONValue, OperationInput, OperationResponse, SqlParameter } from '@azure/cosmos';
import type { Principal } from '../auth/principal.js';
import { DependencyUnavailableError, preconditionFailed } from '../errors.js';
import { entityTag, satisfies, type IfMatch } from '../http/etag.js';
import { container, cosmosStatus } from './cosmos.js';
import { recordedResult, recordResultOperation, type IdempotentRequest } from './idempotency.js';
import { queryPage, type Page } from './paging.js';
import { nextInSequence } from './sequence.js';

/** What every document of the tenant-data container has. */
export interface StoredDocument {
  id: string;
  tenantId: string;
  type: string;
  _etag: string;
}

export const tenantData = (): Promise<Container> => container('tenantData');

/** Page size for reading a whole partition: -1 lets Cosmos fill each page (up to 4 MB), the fewest round trips. */
export const FULL_SCAN_PAGE = -1;

/** The document of that type with that id in the tenant's partition, if there is one. */
export async function readDocument<D extends StoredDocument>(tenantId: string, id: string, type: D['type']): Promise<D | undefined> {
  const { resource } = await (await tenantData()).item(id, tenantId).read<D>();
  return resource?.type === type ? resource : undefined;
}

/** Cosmos wants the documents it stores as JSON objects; ours are plain data. */
export const asJson = (document: object): JSONObject => document as unknown as JSONObject;

const MAX_WRITE_ATTEMPTS = 5;
/** Read-modify-write under contention: attempts, and the most a retry waits (with jitter), before a 503. */
const MAX_UPDATE_ATTEMPTS = 25;
const MAX_UPDATE_BACKOFF_MS = 50;

/**
 * Read-modify-write under optimistic concurrency. The client's If-Match is compared with the tag of
 * what it could have read; Cosmos's own etag guards the write underneath, so a concurrent change is
 * never lost: on a clash the document is read again and, if the client's version still stands
 * (or it sent no If-Match), the change is applied again, after a short random wait. Contention that
 * outlasts the attempts is a 503, never a raw database error.
 */
export async function updateDocument<D extends StoredDocument>(options: {
  ifMatch: IfMatch;
  read(): Promise<D>;
  represent(document: D): unknown;
  change(current: D): D | Promise<D>;
}): Promise<D> {
  const documents = await tenantData();
  for (let attempt = 1; ; attempt++) {
    const current = await options.read();
    if (!satisfies(options.ifMatch, entityTag(options.represent(current)))) throw preconditionFailed();
    const next = await options.change(current);
    try {
      const { resource } = await documents
        .item(current.id, current.tenantId)
        .replace(asJson(next), { accessCondition: { type: 'IfMatch', condition: current._etag } });
      return resource as unknown as D;
    } catch (error) {
      // 412: someone wrote first; 404: someone deleted it (the next read answers that properly).
      const status = cosmosStatus(error);
      if (status !== 412 && status !== 404) throw error;
      if (attempt >= MAX_UPDATE_ATTEMPTS) throw new DependencyUnavailableError('database', error);
      await delay(Math.random() * Math.min(MAX_UPDATE_BACKOFF_MS, 5 * attempt));
    }
  }
}

/**
 * A batch operation that fails unless the document still exists: a guard for an invariant across
 * documents. A read writes nothing, so guarded creates never contend with each other.
 */
export function stillExists(document: StoredDocument): OperationInput {
  return { operationType: 'Read', id: document.id, partitionKey: document.tenantId };
}

export interface Created<R> {
  representation: R;
  replayed: boolean;
}

/**
 * Creates a document whose id comes from a per-tenant sequence, honouring an Idempotency-Key.
 * `check` looks up what the create depends on (while the id is reserved, so it adds no wait), and
 * `prepare` builds the document from the number and what `check` found. It may return a guard: a
 * batch operation that must succeed for the create to happen (on a failed guard, the check and
 * the create are tried again). The guard goes first and the Idempotency-Key record second, so that
 * either failing stops the create, and a failed guard leaves no record behind, even where batches
 * are not transactional.
 */
export async function createDocument<D extends Omit<StoredDocument, '_etag'>, R, C = undefined>(options: {
  principal: Principal;
  idempotent: IdempotentRequest | undefined;
  sequence: string;
  check?(): Promise<C>;
  prepare(number: number, checked: C): { document: D; guard?: OperationInput };
  represent(document: D): R;
}): Promise<Created<R>> {
  const documents = await tenantData();
  const { tenantId } = options.principal;
  if (options.idempotent) {
    const replay = await recordedResult<R>(documents, tenantId, options.idempotent);
    if (replay) return { representation: replay, replayed: true };
  }
  const [number, checkedFirst] = await Promise.all([nextInSequence(documents, tenantId, options.sequence), options.check?.()]);
  let checked = checkedFirst;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1 && options.check) checked = await options.check();
    const { document, guard } = options.prepare(number, checked as C);
    const representation = options.represent(document);
    const create: OperationInput = { operationType: 'Create', resourceBody: asJson(document) };
    if (!options.idempotent && !guard) {
      await documents.items.create(document);
      return { representation, replayed: false };
    }
    const record = options.idempotent ? recordResultOperation(tenantId, options.idempotent, representation) : undefined;
    const operations = [guard, record, create].filter((operation): operation is OperationInput => operation !== undefined);
    const { result = [] } = await documents.items.batch(operations, tenantId);
    const outcome = (operation: OperationInput | undefined): OperationResponse | undefined => (operation ? result[operations.indexOf(operation)] : undefined);
    if (outcome(record)?.statusCode === 409) {
      // A concurrent request with the same key won the race: answer with its result.
      const replay = await recordedResult<R>(documents, tenantId, options.idempotent!);
      if (replay) return { representation: replay, replayed: true };
    }
    const guardStatus = outcome(guard)?.statusCode;
    if ((guardStatus === 412 || guardStatus === 404) && attempt < MAX_WRITE_ATTEMPTS) continue;
    if (outcome(create)?.statusCode !== 201) {
      throw new Error(`${options.sequence} batch failed: ${result.map((operation) => operation.statusCode).join(',')}`);
    }
    return { representation, replayed: false };
  }
}

/** A filter of a list: its condition (naming its value `@<filter name>`) and the value, if the caller gave one. */
export type ListFilter = [condition: string, value: JSONValue | undefined];

/**
 * One page of the documents of one type in the tenant's partition. Each filter given adds its
 * condition; every value reaches Cosmos as a parameter, never as query text. The cursor is bound
 * to the tenant, the type, the filters and the order.
 */
export async function listPage<D>(options: {
  tenantId: string;
  type: string;
  /** Conditions every document listed must meet, whatever the filters. */
  always?: string[];
  filters: Record<string, ListFilter>;
  orderBy: string;
  limit: number;
  cursor: string | undefined;
}): Promise<Page<D>> {
  const { tenantId, type } = options;
  const conditions = ['c.tenantId = @tenantId', 'c.type = @type', ...(options.always ?? [])];
  const parameters: SqlParameter[] = [
    { name: '@tenantId', value: tenantId },
    { name: '@type', value: type },
  ];
  for (const [name, [condition, value]] of Object.entries(options.filters)) {
    if (value === undefined) continue;
    conditions.push(condition);
    parameters.push({ name: `@${name}`, value });
  }
  const query = { query: `SELECT * FROM c WHERE ${conditions.join(' AND ')} ORDER BY ${options.orderBy}`, parameters };
  const scope = JSON.stringify([tenantId, type, options.orderBy, parameters]);
  return queryPage<D>(await tenantData(), tenantId, query, { limit: options.limit, cursor: options.cursor, scope });
}
