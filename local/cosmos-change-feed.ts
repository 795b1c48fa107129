/**
 * The embedded Cosmos DB's change feed in latest-version mode, as Cosmos DB serves it (docs/local-stack.md):
 * the writes of one request get their container's next logical sequence number (LSN), and a read answers
 * the documents changed after its continuation, in LSN order, each once and as it now is. A change shows
 * once it is durable; a deleted document leaves the feed.
 */
import type { IncomingMessage } from 'node:http';
import type { PartitionKeyValue, StoredDocument } from './cosmos-disk.js';

/** A document as the feed knows it: its key, its partition key, and where the server keeps it. */
export interface ChangedDocument {
  key: string;
  partitionKey: PartitionKeyValue;
  find: { partition: unknown; id: string };
}

type Change = ChangedDocument & { lsn: number };

/** A read of the feed: after an LSN or from now, changed since a time (in seconds), in a partition key, a page's size. */
export interface FeedRequest {
  after: number | 'now';
  since: number | undefined;
  partitionKey: PartitionKeyValue | undefined;
  maxItemCount: number;
}

/** The page size when the client names none, as Cosmos's default. */
const DEFAULT_PAGE = 100;

export function isChangeFeedRequest(request: IncomingMessage): boolean {
  return request.method === 'GET' && /incremental feed/i.test(String(request.headers['a-im'] ?? '')) && /\/docs\/?(?:\?|$)/.test(request.url ?? '');
}

/**
 * What a change feed request asks for, from its headers (`If-None-Match`: absent from the beginning, `*`
 * from now, `"<lsn>"` after it; `If-Modified-Since`; the partition key; the page size), or an error message.
 */
export function feedRequest(request: IncomingMessage): FeedRequest | string {
  const ifNoneMatch = request.headers['if-none-match'];
  const after = ifNoneMatch === '*' ? 'now' : Number(ifNoneMatch?.replaceAll('"', '') ?? 0);
  if (after !== 'now' && (!Number.isSafeInteger(after) || after < 0)) return `The continuation ${ifNoneMatch} is not one of this feed's`;
  const modifiedSince = request.headers['if-modified-since'];
  const since = modifiedSince === undefined ? undefined : Date.parse(modifiedSince);
  if (since !== undefined && Number.isNaN(since)) return `If-Modified-Since ${modifiedSince} is not a date`;
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
  return { after, since: since === undefined ? undefined : Math.floor(since / 1000), partitionKey, maxItemCount };
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

  /** The next LSN, for the writes of one request: their changes are recorded but not shown until published. */
  record(written: readonly ChangedDocument[], removed: readonly string[]): number {
    const lsn = ++this.#lastLsn;
    for (const key of removed) this.#latest.delete(key);
    for (const document of written) this.#add({ ...document, lsn });
    // Superseded changes are dropped once they are most of the log.
    const superseded = this.#log.length - this.#latest.size;
    if (superseded >= 1_000 && superseded >= this.#latest.size) this.#log = this.#log.filter((change) => this.#isLatest(change));
    return lsn;
  }

  /** The writes up to that LSN are durable: the feed shows them. */
  publish(lsn: number): void {
    this.#visible = Math.max(this.#visible, lsn);
  }

  /** A document kept from an earlier run, loaded at start with the LSN it had (Infinity: after the others, numbered by `restored`). */
  restore(document: ChangedDocument, lsn: number): void {
    this.#add({ ...document, lsn });
  }

  restored(): void {
    this.#log = this.#log.filter((change) => this.#isLatest(change)).sort((a, b) => a.lsn - b.lsn);
    let last = 0;
    for (const change of this.#log) last = change.lsn = Number.isFinite(change.lsn) ? change.lsn : last + 1;
    this.#lastLsn = this.#visible = last;
  }

  /**
   * A page of the changes a request asks for: the documents as they now are, with `_lsn`, and the
   * continuation: the LSN of the last change on the page, or where the request started when nothing is new.
   */
  read(request: FeedRequest, documentAt: (find: ChangedDocument['find']) => StoredDocument | undefined): { documents: object[]; continuation: number } {
    if (request.after === 'now') return { documents: [], continuation: this.#visible };
    const documents: object[] = [];
    let last = request.after;
    for (let index = this.#firstAfter(request.after); index < this.#log.length; index++) {
      const change = this.#log[index]!;
      // A page ends before a new LSN once it is full: one LSN's changes stay together.
      if (change.lsn > this.#visible || (documents.length >= request.maxItemCount && change.lsn !== last)) break;
      if (!this.#isLatest(change) || (request.partitionKey && !samePrefix(request.partitionKey, change.partitionKey))) continue;
      const document = documentAt(change.find);
      if (request.since !== undefined && Number(document?._ts ?? 0) < request.since) continue;
      documents.push({ ...document, _lsn: change.lsn });
      last = change.lsn;
    }
    // Nothing new in this scope: the continuation moves to what has been looked at, so the next read starts there.
    return { documents, continuation: documents.length > 0 ? last : Math.max(request.after, this.#visible) };
  }

  #add(change: Change): void {
    this.#latest.set(change.key, change);
    this.#log.push(change);
  }

  #isLatest(change: Change): boolean {
    return this.#latest.get(change.key) === change;
  }

  /** The index of the first change after that LSN (binary search: the log is in LSN order). */
  #firstAfter(lsn: number): number {
    let low = 0;
    let high = this.#log.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#log[middle]!.lsn <= lsn) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
