import { setTimeout as delay } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import type { Container, JSONObject, OperationInput, OperationResponse } from '@azure/cosmos';
import type { z } from 'zod';
import { satisfies, versionOf, type ExpectedVersion } from '../domain/versions.js';
import { RuleError, stale } from '../domain/errors.js';
import { settleAll } from '../lib/settle-all.js';
import { sendBatch } from './batches.js';
import { container } from './cosmos.js';
import { eventWrite, type NewEvent } from './events.js';
import { idempotentRequest, recordedResult, recordResultOperation, type Idempotency } from './idempotency.js';
import { nextInSequence } from './sequence.js';

/** What every document of the tenant-data container has. */
export interface StoredDocument {
  id: string;
  tenantId: string;
  type: string;
  _etag: string;
}

/** One kind of document in the tenant's partition, and the resource the API shows for it. */
export interface DocumentKind<D extends StoredDocument, R> {
  type: D['type'];
  resourceOf(document: D): R;
  /** The 404 for an id that names no document of this kind. */
  missing(id: string): RuleError;
  /** Documents of this kind that no reader may see, as a test of one document and as a query condition. */
  hidden?: { is(document: D): boolean; where: string };
}

/** The resource a document shows: exactly the fields of the resource's schema, in its order. */
export function fieldsOf<S extends z.ZodObject>(schema: S): (document: z.output<S>) => z.output<S> {
  const names = Object.keys(schema.shape);
  return (document) => {
    const resource: Record<string, unknown> = {};
    for (const name of names) resource[name] = (document as Record<string, unknown>)[name];
    return resource as z.output<S>;
  };
}

export const tenantData = (): Promise<Container> => container('tenantData');

/** Page size for reading a whole partition: -1 lets Cosmos fill each page (up to 4 MB), the fewest round trips. */
export const FULL_SCAN_PAGE = -1;

/** The document of that type with that id in the tenant's partition, if there is one, hidden or not. */
export async function readDocument<D extends StoredDocument>(tenantId: string, id: string, type: D['type']): Promise<D | undefined> {
  const { resource } = await (await tenantData()).item(id, tenantId).read<D>();
  return resource?.type === type ? resource : undefined;
}

/** The document as its readers see it: the kind's 404 when it is absent or hidden. */
export async function readVisible<D extends StoredDocument, R>(kind: DocumentKind<D, R>, tenantId: string, id: string): Promise<D> {
  const document = await readDocument<D>(tenantId, id, kind.type);
  if (!document || kind.hidden?.is(document)) throw kind.missing(id);
  return document;
}

/** Cosmos wants the documents it stores as JSON objects; ours are plain data. */
export const asJson = (document: object): JSONObject => document as unknown as JSONObject;

const MAX_CREATE_ATTEMPTS = 5;
/** Read-modify-write under contention between instances: attempts, and the most a retry waits (with jitter). */
const MAX_CHANGE_ATTEMPTS = 25;
const MAX_CHANGE_BACKOFF_MS = 50;
/** Contention that outlasted the attempts: a refusal that says so (the caller may come back soon). Not an outage. */
const contended = (what: string) => new RuleError('contended', 'changeContended', { id: what.slice(0, 100) });

/** The change under way in this process to each document, if any: the next one waits for it. */
const changesUnderWay = new Map<string, Promise<unknown>>();

/** Runs changes to one document (or anything a key names) one after another within this process, so that they never clash here. */
export async function oneAtATime<T>(documentKey: string, change: () => Promise<T>): Promise<T> {
  const previous = changesUnderWay.get(documentKey) ?? Promise.resolve();
  const mine = previous.then(change);
  const settled = mine.catch(() => undefined);
  changesUnderWay.set(documentKey, settled);
  try {
    return await mine;
  } finally {
    if (changesUnderWay.get(documentKey) === settled) changesUnderWay.delete(documentKey);
  }
}

/** What a change returns to remove the document instead of replacing it. */
export const REMOVE = Symbol('remove');

/** What a change stamps on every document it writes: the time of the change. On its own it is no change. */
const CHANGE_STAMPS: ReadonlySet<string> = new Set(['updatedAt']);

/** A document's fields as JSON stores them (one holding undefined is absent), without the change's stamp and Cosmos DB's own (`_etag`, `_ts`, …). */
const storedFields = (document: object): unknown =>
  JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(document).filter(([name]) => !CHANGE_STAMPS.has(name) && !name.startsWith('_')))));

/**
 * Whether a change leaves the document as it is stored: every field equal but the change's stamp
 * (`updatedAt`) and Cosmos's own properties. Fields readers do not see count too (a project's
 * `nameSort`, a task's `priorityRank`, a subscription's `failedInARow`): a change that alters one
 * of them is written, even though the resource looks the same.
 */
export function changesNothing(current: object, next: object): boolean {
  return isDeepStrictEqual(storedFields(current), storedFields(next));
}

/**
 * The one conditional write: changes (or removes) one document under optimistic concurrency. The
 * version the caller expects is compared with the version of the resource as it could have read
 * it; Cosmos's own etag guards the write underneath, so a concurrent change is never lost: on a
 * clash the document is read again and, if the expected version still stands (or none was asked
 * for), the change is applied again after a short random wait. Within one instance, changes to a
 * document take turns and never clash; contention between instances that outlasts the attempts is
 * a 409 that says so, with Retry-After. Contention is not an outage.
 *
 * A change that leaves the document as it is stored (see changesNothing) writes nothing: no event,
 * nothing alongside, the stored document answered as read, so its `updatedAt` and its version stay
 * as they were. The expected version and the rules the change applies are checked all the same (a
 * stale version is a 412, a read-only document a 409). A caller whose write is the point (to show
 * the document to the change feed again) says `touch`.
 */
export function changeDocument<D extends StoredDocument, R>(options: {
  kind: DocumentKind<D, R>;
  tenantId: string;
  id: string;
  expected: ExpectedVersion;
  change(current: D): D | typeof REMOVE | Promise<D | typeof REMOVE>;
  /** The webhook event the change makes, written in the same transactional batch. */
  event?(change: { before: D; after: D | undefined }): NewEvent;
  /** Other writes that must happen with the change, in the same transactional batch. */
  alongside?(current: D): OperationInput[];
  /**
   * A batch operation that must succeed for the change to happen, made after `change`: an invariant across
   * documents. On a 412 or 404 the document is read and the change made again, which checks the invariant anew.
   */
  guard?(): OperationInput;
  /** How to read the current document: by default as readers see it. */
  read?: () => Promise<D>;
  /** Write even when the change leaves the document as it is: the write itself is wanted (it goes through the change feed). */
  touch?: boolean;
}): Promise<D | undefined> {
  const { tenantId, id } = options;
  return oneAtATime(`${tenantId}/${id}`, () => changeOnce(options));
}

async function changeOnce<D extends StoredDocument, R>(options: Parameters<typeof changeDocument<D, R>>[0]): Promise<D | undefined> {
  const { kind, tenantId, id } = options;
  const read = options.read ?? (() => readVisible(kind, tenantId, id));
  const documents = await tenantData();
  for (let attempt = 1; ; attempt++) {
    const current = await read();
    if (!satisfies(options.expected, versionOf(kind.resourceOf(current)))) throw stale();
    const next = await options.change(current);
    // Nothing to change: nothing to write, nothing to announce.
    if (next !== REMOVE && !options.touch && changesNothing(current, next)) return current;
    const event = options.event && eventWrite(tenantId, options.event({ before: current, after: next === REMOVE ? undefined : next }));
    // The write itself, guarded by the version read; in Cosmos's batches a delete takes ifMatch too.
    const write = (
      next === REMOVE
        ? { operationType: 'Delete', id, partitionKey: tenantId, ifMatch: current._etag }
        : { operationType: 'Replace', id, partitionKey: tenantId, ifMatch: current._etag, resourceBody: asJson(next) }
    ) as OperationInput;
    // The guard first, so that its failure is the one the batch answers.
    const guard = options.guard?.();
    const operations = [...(guard ? [guard] : []), write, ...(event ? [event] : []), ...(options.alongside?.(current) ?? [])];
    const result = await sendBatch(documents, operations, tenantId);
    const [guarded, written] = guard ? result : [undefined, ...result];
    // A guard's refusal is the batch's answer (the write then answers 424); else the write's (a guard then answers 424 or 200).
    const refused = guarded !== undefined && (guarded.statusCode === 412 || guarded.statusCode === 404);
    const status = refused ? guarded.statusCode : written?.statusCode;
    if (status !== undefined && status < 300) return next === REMOVE ? undefined : (written!.resourceBody as unknown as D);
    // 412: someone wrote first, or the guard's condition no longer holds; 404: someone deleted it (the next read answers that properly).
    if (status !== 412 && status !== 404) throw batchFailure('A conditional write', result);
    if (attempt >= MAX_CHANGE_ATTEMPTS) throw contended(id);
    await delay(Math.random() * Math.min(MAX_CHANGE_BACKOFF_MS, 5 * attempt));
  }
}

/**
 * A transactional batch that failed for a reason of the database's own: an error carrying the status
 * of the operation that failed (not the 424s of those that did not run because of it), as the SDK's
 * own errors do, so that throttling or an outage is answered as one.
 */
export function batchFailure(what: string, result: readonly OperationResponse[]): Error {
  const failed = result.find((operation) => operation.statusCode >= 400 && operation.statusCode !== 424) ?? result[0];
  return Object.assign(new Error(`${what} failed: ${result.map((operation) => operation.statusCode).join(',')}`), { code: failed?.statusCode });
}

/**
 * A batch operation that fails unless the document still exists (404) and meets `where`, a condition on
 * `c` (412): a guard for an invariant across documents. Cosmos does not honour If-Match on a read in a
 * batch, so the guard is a conditional patch, which counts the writes it guarded. With no If-Match
 * of its own, guarded writes never contend with each other, only with a change to the guarding
 * document, which is tried again.
 */
export function stillExists(document: StoredDocument, where = 'true'): OperationInput {
  return {
    operationType: 'Patch',
    id: document.id,
    partitionKey: document.tenantId,
    resourceBody: { condition: `FROM c WHERE ${where}`, operations: [{ op: 'incr', path: '/guardedWrites', value: 1 }] },
  };
}

export interface Created<R> {
  resource: R;
  /** The stored result of an earlier request with the same Idempotency-Key. */
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
  kind: Pick<DocumentKind<D & StoredDocument, R>, 'resourceOf'>;
  tenantId: string;
  /** Who asks: an Idempotency-Key is theirs. */
  actor: string;
  /** The Idempotency-Key, and the request it came with. */
  idempotency: Idempotency | undefined;
  request: unknown;
  sequence: string;
  check?(): Promise<C>;
  prepare(number: number, checked: C): { document: D; guard?: OperationInput };
  /** The webhook event the create makes, written in the same transactional batch. */
  event?(resource: R): NewEvent;
}): Promise<Created<R>> {
  const documents = await tenantData();
  const { tenantId, actor } = options;
  const idempotent = options.idempotency && idempotentRequest(options.idempotency, actor, options.request);
  if (idempotent) {
    const replay = await recordedResult<R>(documents, tenantId, idempotent);
    if (replay) return { resource: replay, replayed: true };
  }
  // Both settle before the create goes on or fails: a refused check leaves no reservation running after the answer.
  const [number, checkedFirst] = await settleAll([nextInSequence(documents, tenantId, options.sequence), options.check?.()]);
  let checked = checkedFirst;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1 && options.check) checked = await options.check();
    const { document, guard } = options.prepare(number, checked as C);
    const resource = options.kind.resourceOf(document as D & StoredDocument);
    const create: OperationInput = { operationType: 'Create', resourceBody: asJson(document) };
    const written = options.event && eventWrite(tenantId, options.event(resource));
    if (!idempotent && !guard && !written) {
      await documents.items.create(document);
      return { resource, replayed: false };
    }
    const record = idempotent ? recordResultOperation(tenantId, idempotent, resource) : undefined;
    const operations = [guard, record, create, written].filter((operation): operation is OperationInput => operation !== undefined);
    const result = await sendBatch(documents, operations, tenantId);
    const outcome = (operation: OperationInput | undefined): OperationResponse | undefined => (operation ? result[operations.indexOf(operation)] : undefined);
    if (idempotent && outcome(record)?.statusCode === 409) {
      // A concurrent request with the same key won the race: answer with its result.
      const replay = await recordedResult<R>(documents, tenantId, idempotent);
      if (replay) return { resource: replay, replayed: true };
    }
    const guardStatus = outcome(guard)?.statusCode;
    // 412 or 404: what the guard reads changed or went; 409: what it creates was taken first.
    if (guardStatus === 412 || guardStatus === 404 || guardStatus === 409) {
      if (attempt < MAX_CREATE_ATTEMPTS) continue;
      throw contended(options.sequence);
    }
    if (outcome(create)?.statusCode !== 201) throw batchFailure(`Creating in ${options.sequence}`, result);
    return { resource, replayed: false };
  }
}
