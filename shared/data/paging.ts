import { createHash } from 'node:crypto';
import type { Container, SqlQuerySpec } from '@azure/cosmos';
import { badRequest } from '../errors.js';
import { cosmosStatus } from './cosmos.js';

/**
 * Cursors wrap Cosmos continuation tokens with a fingerprint of the tenant and the query they belong
 * to, so a cursor replayed against other filters, or edited, is a clear 400 rather than a wrong page.
 */
interface CursorBody {
  v: 1;
  c: string;
  f: string;
}

function fingerprint(scope: string, continuation: string): string {
  return createHash('sha256').update(scope).update('\n').update(continuation).digest('base64url').slice(0, 22);
}

export function encodeCursor(scope: string, continuation: string): string {
  const body: CursorBody = { v: 1, c: continuation, f: fingerprint(scope, continuation) };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

export function decodeCursor(scope: string, cursor: string): string {
  let body: Partial<CursorBody>;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CursorBody>;
  } catch {
    throw badRequest('invalidCursor');
  }
  if (body?.v !== 1 || typeof body.c !== 'string' || typeof body.f !== 'string') throw badRequest('invalidCursor');
  if (body.f !== fingerprint(scope, body.c)) throw badRequest('cursorForOtherQuery');
  return body.c;
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
      if (continuation !== undefined && cosmosStatus(error) === 400) throw badRequest('invalidCursor');
      throw error;
    }
    items.push(...response.resources);
    continuation = response.continuationToken || undefined;
  } while (continuation !== undefined && items.length < page.limit);
  return { items, nextCursor: continuation === undefined ? undefined : encodeCursor(page.scope, continuation) };
}
