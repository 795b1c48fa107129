/**
 * The embedded Cosmos DB's change feed, in latest-version mode, as Cosmos DB serves it: every create,
 * replace, upsert or patch of a document gets the next logical sequence number (LSN) of its container
 * (the writes of one transactional batch share one), and a read of the feed answers the documents
 * changed after a continuation, in LSN order, each once and as it is now. A document changed again
 * moves to its new place; a deleted one leaves the feed. A change shows only once it is durable, as
 * Cosmos shows only committed changes. The LSNs are kept with the documents (local/cosmos-journal.ts),
 * so a continuation stays valid across a restart.
 *
 * The protocol (a GET of a container's documents with `A-IM: Incremental feed`):
 * - `If-None-Match` absent: from the beginning; `*`: from now; `"<lsn>"`: after that LSN.
 * - `If-Modified-Since`: changes made at or after that time.
 * - `x-ms-documentdb-partitionkey`: only that partition key's documents (a prefix, for a hierarchical key).
 * - `x-ms-max-item-count`: the page size; the changes of one LSN are never split between pages.
 * - 200 with the documents (each with `_lsn`), or 304 when nothing is new; the ETag is the continuation.
 */
import type { IncomingMessage } from 'node:http';
import type { PartitionKeyValue } from './cosmos-journal.js';

/** One change: the document with that key at that LSN. Superseded ones stay in the log, marked dead, until compaction. */
interface Change {
  lsn: number;
  key: string;
  partitionKey: PartitionKeyValue;
  /** The server's partition value and the id, to read the document as it is now. */
  find: { partition: unknown; id: string };
  dead: boolean;
}

/** A document's place in the feed, as the emulator records a write. */
export interface ChangedDocument {
  key: string;
  partitionKey: PartitionKeyValue;
  find: Change['find'];
}

export type FeedStart = { after: number } | { now: true };

export interface FeedRequest {
  start: FeedStart;
  since: number | undefined;
  partitionKey: PartitionKeyValue | undefined;
  maxItemCount: number;
}

/** The page size when the client names none, as Cosmos's default. */
const DEFAULT_PAGE = 100;

export function isChangeFeedRequest(request: IncomingMessage): boolean {
  return request.method === 'GET' && /incremental feed/i.test(String(request.headers['a-im'] ?? '')) && /\/docs\/?(?:\?|$)/.test(request.url ?? '');
}

/** What a change feed request asks for; an error message for a header the feed cannot read. */
export function feedRequest(request: IncomingMessage): FeedRequest | string {
  const ifNoneMatch = request.headers['if-none-match'];
  let start: FeedStart = { after: 0 };
  if (ifNoneMatch === '*') start = { now: true };
  else if (ifNoneMatch !== undefined) {
    const lsn = Number(ifNoneMatch.replaceAll('"', ''));
    if (!Number.isSafeInteger(lsn) || lsn < 0) return `The continuation ${ifNoneMatch} is not one of this feed's`;
    start = { after: lsn };
  }
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
  return { start, since: since === undefined ? undefined : Math.floor(since / 1000), partitionKey, maxItemCount };
}

const samePrefix = (prefix: PartitionKeyValue, value: PartitionKeyValue) => prefix.every((part, index) => part === value[index]);

/** The change log of one container. */
export class ContainerFeed {
  #changes: Change[] = [];
  readonly #latest = new Map<string, Change>();
  #lastLsn = 0;
  /** The highest LSN whose writes are durable: later ones are not shown yet. */
  #visible = 0;
  #dead = 0;

  /** The next LSN, for the writes of one request: their changes are recorded but not shown until published. */
  record(written: readonly ChangedDocument[], removed: readonly string[]): number {
    const lsn = ++this.#lastLsn;
    for (const key of removed) this.#retire(key);
    for (const document of written) this.#add({ ...document, lsn, dead: false });
    this.#compactIfWorthIt();
    return lsn;
  }

  /** The writes up to that LSN are durable: the feed shows them. */
  publish(lsn: number): void {
    this.#visible = Math.max(this.#visible, lsn);
  }

  /** A document kept from an earlier run, with the LSN it had; call `restored` once all are in. */
  restore(document: ChangedDocument, lsn: number): void {
    this.#add({ ...document, lsn, dead: false });
  }

  restored(): void {
    this.#changes = this.#changes.filter((change) => !change.dead).sort((a, b) => a.lsn - b.lsn);
    this.#dead = 0;
    this.#lastLsn = this.#visible = this.#changes.at(-1)?.lsn ?? 0;
  }

  /** The highest LSN given so far, to number documents kept from before LSNs were kept. */
  get lastLsn(): number {
    return this.#lastLsn;
  }

  /**
   * The changes a request asks for, as places to read the documents from, and the continuation: the
   * LSN of the last change on the page, or where the request started when nothing is new.
   */
  read(
    request: FeedRequest,
    timestampOf: (find: Change['find']) => number | undefined,
  ): { changes: Change['find'][]; lsn: number }[] | { continuation: number } {
    if ('now' in request.start) return { continuation: this.#visible };
    const after = request.start.after;
    const page: { changes: Change['find'][]; lsn: number }[] = [];
    let count = 0;
    for (let index = this.#firstAfter(after); index < this.#changes.length; index++) {
      const change = this.#changes[index]!;
      if (change.lsn > this.#visible) break;
      if (change.dead) continue;
      if (request.partitionKey && !samePrefix(request.partitionKey, change.partitionKey)) continue;
      if (request.since !== undefined && (timestampOf(change.find) ?? 0) < request.since) continue;
      // A page ends before a new LSN once it is full: one LSN's changes stay together.
      if (count >= request.maxItemCount && page.at(-1)!.lsn !== change.lsn) break;
      if (page.at(-1)?.lsn === change.lsn) page.at(-1)!.changes.push(change.find);
      else page.push({ lsn: change.lsn, changes: [change.find] });
      count += 1;
    }
    // Nothing new in this scope: the continuation moves to what has been looked at, so the next read starts there.
    return page.length > 0 ? page : { continuation: Math.max(after, this.#visible) };
  }

  #add(change: Change): void {
    this.#retire(change.key);
    this.#latest.set(change.key, change);
    this.#changes.push(change);
  }

  #retire(key: string): void {
    const previous = this.#latest.get(key);
    if (!previous) return;
    previous.dead = true;
    this.#dead += 1;
    this.#latest.delete(key);
  }

  /** The index of the first change after that LSN (binary search: the log is in LSN order). */
  #firstAfter(lsn: number): number {
    let low = 0;
    let high = this.#changes.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#changes[middle]!.lsn <= lsn) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Superseded changes are dropped once they are most of the log. */
  #compactIfWorthIt(): void {
    if (this.#dead < 1_000 || this.#dead * 2 < this.#changes.length) return;
    this.#changes = this.#changes.filter((change) => !change.dead);
    this.#dead = 0;
  }
}
