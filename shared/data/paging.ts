import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Container, SqlQuerySpec } from '@azure/cosmos';
import { cursorSigningKey } from '../settings/read.js';
import { invalid } from '../domain/errors.js';
import { cosmosStatus } from './cosmos.js';

/**
 * A paging cursor: the continuation to resume from (a Cosmos continuation token, or Graph's next
 * link), a digest of the query it belongs to (tenant, filters, order), and a MAC over both with the
 * server's key. The client can read it but not forge or edit one; a cursor replayed against another
 * query is a clear 400 rather than a wrong page, and nothing the client composed ever reaches the
 * database or Graph. A long continuation is compressed: Graph's next link repeats a search's `q`,
 * percent-encoded, three times, and with 200 characters of kana its cursor was 8,170 characters
 * long, where a cursor may be 4,096 (2,411 now for 200 random ideographs). A short one, such as
 * Cosmos's, is kept as it is: deflating it would cost each page more than it saves.
 */
interface CursorBody {
  v: 3;
  /** A long continuation, deflated, in base64url. */
  c?: string;
  /** A short continuation, as it is. */
  r?: string;
  s: string;
  m: string;
}

/** The bytes from which a continuation is deflated. */
const DEFLATE_FROM = 512;

/** Far more than any continuation the server hands out: a cursor that inflates past it is not one of ours. */
const MAX_CONTINUATION_BYTES = 64 * 1024;

const scopeDigest = (scope: string): string => createHash('sha256').update(scope).digest('base64url').slice(0, 22);

/** The MAC of a continuation, deflated (`c`) or as it is (`r`, marked so, as base64url has no ':'), and its query's digest. */
function mac(continuation: Pick<CursorBody, 'c' | 'r'>, digest: string): Buffer {
  const signed = continuation.c ?? `raw:${continuation.r}`;
  return createHmac('sha256', cursorSigningKey()).update(digest).update('\n').update(signed).digest();
}

/** The one spelling of a cursor: the server's JSON of its fields, in base64url without padding. */
function spelling(continuation: { c: string } | { r: string }, digest: string): string {
  const body: CursorBody = { v: 3, ...continuation, s: digest, m: mac(continuation, digest).toString('base64url') };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

export function encodeCursor(scope: string, continuation: string): string {
  // Measured as the cursor's JSON spells it, escapes and UTF-8 included.
  const short = Buffer.byteLength(JSON.stringify(continuation)) < DEFLATE_FROM;
  const packed = short ? { r: continuation } : { c: deflateRawSync(continuation).toString('base64url') };
  return spelling(packed, scopeDigest(scope));
}

export function decodeCursor(scope: string, cursor: string): string {
  let body: Partial<CursorBody> | null;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorBody> | null;
  } catch {
    throw invalid('invalidCursor');
  }
  if (body?.v !== 3 || typeof body.s !== 'string') throw invalid('invalidCursor');
  const { c, r } = body;
  // Exactly one of the two, a string.
  const packed: { c: string } | { r: string } | undefined =
    typeof c === 'string' && r === undefined ? { c } : typeof r === 'string' && c === undefined ? { r } : undefined;
  if (!packed) throw invalid('invalidCursor');
  // Base64 decoding and JSON parsing forgive many spellings of the same bytes (padding, '+' and '/',
  // stray characters, spare bits, other JSON): only the server's own is accepted, so a page has one
  // cursor. Comparing whole spellings in constant time checks the MAC too.
  const expected = Buffer.from(spelling(packed, body.s));
  const given = Buffer.from(cursor);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid('invalidCursor');
  if (body.s !== scopeDigest(scope)) throw invalid('cursorForOtherQuery');
  if ('r' in packed) return packed.r;
  try {
    return inflateRawSync(Buffer.from(packed.c, 'base64url'), { maxOutputLength: MAX_CONTINUATION_BYTES }).toString('utf8');
  } catch {
    throw invalid('invalidCursor');
  }
}

export interface Page<T> {
  items: T[];
  /** Present when more items follow. */
  nextCursor: string | undefined;
}

/**
 * One page of a single-partition query. Cosmos may return short pages before the end, so this keeps
 * asking until the page is full or the results end, then hands out the continuation as a cursor.
 */
export async function queryPage<T>(
  container: Container,
  partitionKey: string,
  query: SqlQuerySpec,
  page: { limit: number; cursor: string | undefined; scope: string },
): Promise<Page<T>> {
  let continuation = page.cursor === undefined ? undefined : decodeCursor(page.scope, page.cursor);
  const items: T[] = [];
  do {
    let response;
    try {
      response = await container.items.query<T>(query, { partitionKey, maxItemCount: page.limit - items.length, continuationToken: continuation }).fetchNext();
    } catch (error) {
      // A continuation token Cosmos cannot read is the client's mistake, not ours.
      if (continuation !== undefined && cosmosStatus(error) === 400) throw invalid('invalidCursor');
      throw error;
    }
    items.push(...response.resources);
    continuation = response.continuationToken || undefined;
  } while (continuation !== undefined && items.length < page.limit);
  return { items, nextCursor: continuation === undefined ? undefined : encodeCursor(page.scope, continuation) };
}
