/** The embedded Cosmos DB's change feed in latest-version mode, as Cosmos DB serves it (docs/local-stack.md). */
import type { IncomingMessage } from 'node:http';
import type { PartitionKeyValue, StoredDocument } from './disk.js';

/** A document as the feed knows it: where the server keeps it (its id and partition), and its partition key. */
export interface ChangedDocument {
  id: string;
  partition: unknown;
  partitionKey: PartitionKeyValue;
}

type Change = ChangedDocument & { key: string; lsn: number };
const keyOf = ({ id, partition }: ChangedDocument) => JSON.stringify([id, partition]);

/** A read of the feed: after an LSN or from now, changed since a time (in seconds), in a partition key, a page's size. */
export interface FeedRequest {
  after: number | 'now';
  since: number | undefined;
  partitionKey: PartitionKeyValue | undefined;
  maxItemCount: number;
}

/** The page size when the client names none, as Cosmos's default. */
const DEFAULT_PAGE = 100;

/**
 * What a change feed request asks for, from its headers (`If-None-Match`: absent from the beginning, `*`
 * from now, `"<lsn>"` after it; `If-Modified-Since`; the partition key; the page size), or an error message.
 */
export function feedRequest(request: IncomingMessage): FeedRequest | string {
  const ifNoneMatch = request.headers['if-none-match'];
  const after = ifNoneMatch === '*' ? 'now' : Number(ifNoneMatch?.replaceAll('"', '') ?? 0);
  if (after !== 'now' && (!Number.isSafeInteger(after) || after < 0)) return `The continuation ${ifNoneMatch} is not one of this feed's`;
  const modifiedSince = request.headers['if-modified-since'];
  const since = modifiedSince === undefined ? undefined : Math.floor(Date.parse(modifiedSince) / 1000);
  if (Number.isNaN(since)) return `If-Modified-Since ${modifiedSince} is not a date`;
  let partitionKey: PartitionKeyValue | undefined;
  const header = request.headers['x-ms-documentdb-partitionkey'];
  if (typeof header === 'string') {
    try {
      partitionKey = [JSON.parse(header) as unknown].flat() as PartitionKeyValue;
    } catch {
      return `The partition key ${header} is not JSON`;
    }
  }
  if (request.headers['x-ms-start-epk'] || request.headers['x-ms-end-epk'])
    return 'The embedded store serves the change feed of whole partition key ranges or partition keys only';
  const asked = Number(request.headers['x-ms-max-item-count']);
  const maxItemCount = Number.isInteger(asked) && asked > 0 ? asked : DEFAULT_PAGE;
  return { after, since, partitionKey, maxItemCount };
}

/** The index of the first of the sorted items that `isBefore` is false for (binary search). */
export function firstIndex<T>(sorted: readonly T[], isBefore: (item: T) => boolean): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (isBefore(sorted[middle]!)) low = middle + 1;
    else high = middle;
  }
  return low;
}

const samePrefix = (prefix: PartitionKeyValue, value: PartitionKeyValue) => prefix.every((part, index) => part === value[index]);

/** The change log of one container. */
export class ContainerFeed {
  /** The changes in LSN order; one superseded by a later change of its document stays until the log is compacted. */
  #log: Change[] = [];
  /** The latest change of each document in the feed, by key. */
  readonly #latest = new Map<string, Change>();
  #lastLsn = 0;
  /** The highest LSN whose writes are durable: later ones are not shown yet. */
  #visible = 0;

  /**
   * The writes of one request, in order, under the next LSN (or, at start, the one a kept document had, in LSN order):
   * their changes are recorded but not shown until published.
   */
  record(changes: readonly (ChangedDocument & { deleted: boolean })[], lsn = this.#lastLsn + 1): number {
    // Never back: at start, a container's last LSN (a delete's, past every kept document) may come before a document kept without one.
    this.#lastLsn = Math.max(this.#lastLsn, lsn);
    for (const { deleted, ...document } of changes) {
      if (deleted) this.#latest.delete(keyOf(document));
      else this.#add(document, lsn);
    }
    // Superseded changes are dropped once they are most of the log.
    const superseded = this.#log.length - this.#latest.size;
    if (superseded >= 1_000 && superseded >= this.#latest.size) this.#log = this.#log.filter((change) => this.#isLatest(change));
    return lsn;
  }

  /** The writes up to that LSN are durable: the feed shows them. */
  publish(lsn: number): void {
    this.#visible = Math.max(this.#visible, lsn);
  }

  /**
   * A page of the changes a request asks for: the documents as they now are, with `_lsn`, and the
   * continuation: the LSN of the last change on the page, or where the request started when nothing is new.
   */
  read(request: FeedRequest, documentAt: (change: ChangedDocument) => StoredDocument | undefined): { documents: object[]; continuation: number } {
    const { after } = request;
    if (after === 'now') return { documents: [], continuation: this.#visible };
    const documents: object[] = [];
    let last = after;
    for (let index = firstIndex(this.#log, ({ lsn }) => lsn <= after); index < this.#log.length; index++) {
      const change = this.#log[index]!;
      // A page ends before a new LSN once it is full: one LSN's changes stay together.
      if (change.lsn > this.#visible || (documents.length >= request.maxItemCount && change.lsn !== last)) break;
      if (!this.#isLatest(change) || (request.partitionKey && !samePrefix(request.partitionKey, change.partitionKey))) continue;
      const document = documentAt(change);
      // Past its time to live (the store shows it no more), or older than asked.
      if (!document || (request.since !== undefined && Number(document._ts ?? 0) < request.since)) continue;
      documents.push({ ...document, _lsn: change.lsn });
      last = change.lsn;
    }
    // Nothing new in this scope: the continuation moves to what has been looked at, so the next read starts there.
    return { documents, continuation: documents.length > 0 ? last : Math.max(after, this.#visible) };
  }

  #add(document: ChangedDocument, lsn: number): void {
    const change = { ...document, key: keyOf(document), lsn };
    this.#latest.set(change.key, change);
    this.#log.push(change);
  }

  #isLatest(change: Change): boolean {
    return this.#latest.get(change.key) === change;
  }
}
