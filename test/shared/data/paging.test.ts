/**
 * Paging cursors spelled out, and queryPage against a container stand-in that pages as Cosmos does
 * (short pages before the end, an empty continuation at the end, a 400 for a continuation it cannot
 * read). The stand-in is the database, not the module under test.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { Container, FeedOptions, SqlQuerySpec } from '@azure/cosmos';
import { deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, queryPage } from '../../../shared/data/paging.js';

// The app reads its signing key from its settings on first use.
const KEY = randomBytes(32);
process.env.CURSOR_SIGNING_KEY = KEY.toString('base64');

const SCOPE = JSON.stringify(['tasks', 'tenant-a', 'Todo']);
const digest = (scope: string) => createHash('sha256').update(scope).digest('base64url').slice(0, 22);
const mac = (continuation: string, scopeDigest: string) => createHmac('sha256', KEY).update(`${scopeDigest}\n${continuation}`).digest('base64url');
const cursorOf = (body: unknown) => Buffer.from(JSON.stringify(body)).toString('base64url');
const packed = (continuation: string) => deflateRawSync(continuation).toString('base64url');
const invalid = expect.objectContaining({ refusal: 'invalid', messageKey: 'invalidCursor' });

describe('a cursor', () => {
  // The query's digest, and a long continuation `c` deflated and signed as the server does.
  const s = digest(SCOPE);
  // 512 bytes as the cursor's JSON spells it, quotes included.
  const long = 'c'.repeat(510);
  const c = packed(long);
  const m = mac(c, s);

  it('is a long continuation deflated, a digest of its query and a MAC of both with the server key', () => {
    const cursor = encodeCursor(SCOPE, long);
    expect(JSON.parse(Buffer.from(cursor, 'base64url').toString())).toEqual({ v: 3, c, s, m });
    expect(cursor).toBe(cursorOf({ v: 3, c, s, m }));
  });

  it('is a shorter continuation as it is, marked so under the MAC', () => {
    for (const short of ['c'.repeat(509), `${'ア'.repeat(169)}c`, `${'"'.repeat(254)}c`]) {
      expect(encodeCursor(SCOPE, short)).toBe(cursorOf({ v: 3, r: short, s, m: mac(`raw:${short}`, s) }));
    }
    // Escaped or in UTF-8, a continuation that short in characters can be long.
    for (const long of ['ア'.repeat(170), '"'.repeat(255)]) {
      expect(JSON.parse(Buffer.from(encodeCursor(SCOPE, long), 'base64url').toString())).toHaveProperty('c');
    }
  });

  it('made by the server with the same key is read back', () => {
    const outside = packed('from-outside');
    expect(decodeCursor(SCOPE, cursorOf({ v: 3, c: outside, s, m: mac(outside, s) }))).toBe('from-outside');
    expect(decodeCursor(SCOPE, cursorOf({ v: 3, r: 'as-it-is', s, m: mac('raw:as-it-is', s) }))).toBe('as-it-is');
  });

  it('is refused when it is not base64url JSON, not a version 3 body of strings, or its continuation is not deflated', () => {
    for (const cursor of [
      '%%%',
      'bm90LWpzb24',
      cursorOf(null),
      cursorOf('text'),
      cursorOf({ v: 2, c, s, m }),
      cursorOf({ v: 2, c: 'c', s, m: mac('c', s) }),
      cursorOf({ v: '3', c, s, m }),
      cursorOf({ c, s, m }),
      cursorOf({ v: 3, c: 1, s, m }),
      cursorOf({ v: 3, s, m }),
      cursorOf({ v: 3, c, s: 1, m }),
      cursorOf({ v: 3, c, m }),
      cursorOf({ v: 3, c, s, m: 1 }),
      cursorOf({ v: 3, c, s }),
      cursorOf({ v: 3, r: 1, s, m }),
      // Both forms, or one continuation's MAC under the other form.
      cursorOf({ v: 3, c, r: long, s, m }),
      cursorOf({ v: 3, r: c, s, m }),
      cursorOf({ v: 3, c: 'raw:c', s, m: mac('raw:c', s) }),
      // Signed with the server's key, but not a continuation it deflated.
      cursorOf({ v: 3, c: 'c', s, m: mac('c', s) }),
      cursorOf({ v: 3, c: packed('x'.repeat(70_000)), s, m: mac(packed('x'.repeat(70_000)), s) }),
    ]) {
      expect(() => decodeCursor(SCOPE, cursor), cursor).toThrow(invalid);
    }
  });

  it('is refused when its MAC does not match, whatever its length', () => {
    for (const forged of [
      '',
      m.slice(0, -2),
      `${m}AA`,
      mac(packed('d'), s),
      mac(c, digest('other')),
      createHmac('sha256', randomBytes(32)).update(`${s}\n${c}`).digest('base64url'),
    ]) {
      expect(() => decodeCursor(SCOPE, cursorOf({ v: 3, c, s, m: forged })), forged).toThrow(invalid);
    }
    // Continuation and digest are both under the MAC, each in its place.
    expect(() => decodeCursor(SCOPE, cursorOf({ v: 3, c: `${s}\n${c}`, s: '', m: mac(c, s) }))).toThrow(invalid);
  });

  it("of another query is refused as that, once it proves the server's", () => {
    const cursor = encodeCursor(JSON.stringify(['tasks', 'tenant-b', 'Todo']), 'c');
    expect(() => decodeCursor(SCOPE, cursor)).toThrow(expect.objectContaining({ refusal: 'invalid', messageKey: 'cursorForOtherQuery' }));
  });
});

/** A container with `total` items in one partition, paged as Cosmos pages: at most maxItemCount, and shorter when `shortPages`. */
function cosmosStandIn(total: number, options: { shortPages?: boolean; failWith?: Error } = {}) {
  const requests: { query: SqlQuerySpec; options: FeedOptions }[] = [];
  const container = {
    items: {
      query: (query: SqlQuerySpec, feedOptions: FeedOptions) => ({
        async fetchNext() {
          requests.push({ query, options: feedOptions });
          if (options.failWith) throw options.failWith;
          const start = feedOptions.continuationToken ? Number(feedOptions.continuationToken.slice('after-'.length)) : 0;
          const size = options.shortPages ? Math.min(2, feedOptions.maxItemCount!) : feedOptions.maxItemCount!;
          const end = Math.min(start + size, total);
          const resources = Array.from({ length: end - start }, (_, index) => ({ id: `item-${start + index}` }));
          return { resources, continuationToken: end < total ? `after-${end}` : '' };
        },
      }),
    },
  };
  return { container: container as unknown as Container, requests };
}

const QUERY: SqlQuerySpec = { query: 'SELECT * FROM c WHERE c.type = @type', parameters: [{ name: '@type', value: 'task' }] };
const ids = (items: { id: string }[]) => items.map((item) => Number(item.id.slice('item-'.length)));

describe('a page', () => {
  it('is as long as asked, with a cursor to the rest, in the partition asked', async () => {
    const { container, requests } = cosmosStandIn(10);
    const page = await queryPage<{ id: string }>(container, 'tenant-a', QUERY, { limit: 4, cursor: undefined, scope: SCOPE });
    expect(ids(page.items)).toEqual([0, 1, 2, 3]);
    expect(decodeCursor(SCOPE, page.nextCursor!)).toBe('after-4');
    expect(requests).toEqual([{ query: QUERY, options: { partitionKey: 'tenant-a', maxItemCount: 4, continuationToken: undefined } }]);
  });

  it('goes on from its cursor, and the last has no cursor', async () => {
    const { container, requests } = cosmosStandIn(10);
    const second = await queryPage<{ id: string }>(container, 'tenant-a', QUERY, { limit: 4, cursor: encodeCursor(SCOPE, 'after-4'), scope: SCOPE });
    expect(ids(second.items)).toEqual([4, 5, 6, 7]);
    const last = await queryPage<{ id: string }>(container, 'tenant-a', QUERY, { limit: 4, cursor: second.nextCursor, scope: SCOPE });
    expect(ids(last.items)).toEqual([8, 9]);
    expect(last.nextCursor).toBeUndefined();
    expect(requests.map((request) => request.options.continuationToken)).toEqual(['after-4', 'after-8']);
  });

  it('is filled from short pages, asking each time for what is missing', async () => {
    const { container, requests } = cosmosStandIn(10, { shortPages: true });
    const page = await queryPage<{ id: string }>(container, 'tenant-a', QUERY, { limit: 5, cursor: undefined, scope: SCOPE });
    expect(ids(page.items)).toEqual([0, 1, 2, 3, 4]);
    expect(requests.map((request) => request.options.maxItemCount)).toEqual([5, 3, 1]);
    expect(decodeCursor(SCOPE, page.nextCursor!)).toBe('after-5');
  });

  it('ends exactly when the results end on a full page', async () => {
    const { container } = cosmosStandIn(4);
    const page = await queryPage<{ id: string }>(container, 'tenant-a', QUERY, { limit: 4, cursor: undefined, scope: SCOPE });
    expect(ids(page.items)).toEqual([0, 1, 2, 3]);
    expect(page.nextCursor).toBeUndefined();
  });

  it('refuses a cursor of another query before asking the database', async () => {
    const { container, requests } = cosmosStandIn(10);
    const cursor = encodeCursor('other', 'after-4');
    await expect(queryPage(container, 'tenant-a', QUERY, { limit: 4, cursor, scope: SCOPE })).rejects.toEqual(
      expect.objectContaining({ messageKey: 'cursorForOtherQuery' }),
    );
    expect(requests).toEqual([]);
  });

  it('answers a continuation the database cannot read as a bad cursor, and passes on any other failure', async () => {
    const badRequest = Object.assign(new Error('bad continuation'), { code: 400 });
    const cursor = encodeCursor(SCOPE, 'after-4');
    await expect(queryPage(cosmosStandIn(10, { failWith: badRequest }).container, 'tenant-a', QUERY, { limit: 4, cursor, scope: SCOPE })).rejects.toEqual(
      invalid,
    );
    await expect(
      queryPage(cosmosStandIn(10, { failWith: badRequest }).container, 'tenant-a', QUERY, { limit: 4, cursor: undefined, scope: SCOPE }),
    ).rejects.toBe(badRequest);
    const busy = Object.assign(new Error('busy'), { code: 429 });
    await expect(queryPage(cosmosStandIn(10, { failWith: busy }).container, 'tenant-a', QUERY, { limit: 4, cursor, scope: SCOPE })).rejects.toBe(busy);
  });
});

describe('cursors', () => {
  const scope = JSON.stringify(['projects', 'tenant-a', 'Active']);

  it('round-trip the continuation within the same query', () => {
    const cursor = encodeCursor(scope, '{"token":"+RID:abc#RT:1","range":{"min":"","max":"FF"}}');
    expect(cursor).toMatch(/^[\w-]+$/);
    expect(decodeCursor(scope, cursor)).toBe('{"token":"+RID:abc#RT:1","range":{"min":"","max":"FF"}}');
  });

  it('refuse a cursor from another tenant or query', () => {
    const cursor = encodeCursor(scope, 'continuation');
    expect(() => decodeCursor(JSON.stringify(['projects', 'tenant-b', 'Active']), cursor)).toThrow(
      expect.objectContaining({ refusal: 'invalid', messageKey: 'cursorForOtherQuery' }),
    );
  });

  it('refuse garbage and edited cursors', () => {
    expect(() => decodeCursor(scope, 'bm90LWpzb24')).toThrow(expect.objectContaining({ refusal: 'invalid', messageKey: 'invalidCursor' }));
    const body = JSON.parse(Buffer.from(encodeCursor(scope, 'continuation'), 'base64url').toString()) as { r: string };
    body.r = 'edited';
    expect(() => decodeCursor(scope, Buffer.from(JSON.stringify(body)).toString('base64url'))).toThrow(expect.objectContaining({ refusal: 'invalid' }));
  });

  it('refuse every other spelling of a cursor: padding, base64 instead of base64url, other JSON of the same fields', () => {
    const cursor = encodeCursor(scope, 'continuation?');
    const body = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as Record<string, unknown>;
    const respelled = [
      `${cursor}=`,
      `${cursor}==`,
      Buffer.from(cursor, 'base64url').toString('base64'),
      `${cursor.slice(0, 8)}\n${cursor.slice(8)}`,
      Buffer.from(JSON.stringify(body, null, 1)).toString('base64url'),
      Buffer.from(JSON.stringify({ c: body.c, v: body.v, s: body.s, m: body.m })).toString('base64url'),
      Buffer.from(JSON.stringify({ ...body, m: Buffer.from(body.m as string, 'base64url').toString('base64') })).toString('base64url'),
    ];
    for (const other of respelled) {
      expect(other).not.toBe(cursor);
      expect(() => decodeCursor(scope, other), other).toThrow(expect.objectContaining({ refusal: 'invalid', messageKey: 'invalidCursor' }));
    }
  });

  it('never serve an appended or altered cursor as the same page (property)', () => {
    const characters = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/. %\n'.split(''));
    const edit = fc.oneof(
      fc.record({ kind: fc.constant('append' as const), character: characters, at: fc.nat() }),
      fc.record({ kind: fc.constant('alter' as const), character: characters, at: fc.nat() }),
      fc.record({ kind: fc.constant('insert' as const), character: characters, at: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), edit, (continuation, { kind, character, at }) => {
        const cursor = encodeCursor(scope, continuation);
        const position = at % cursor.length;
        const edited =
          kind === 'append'
            ? `${cursor}${character}`
            : kind === 'insert'
              ? `${cursor.slice(0, position)}${character}${cursor.slice(position)}`
              : `${cursor.slice(0, position)}${character}${cursor.slice(position + 1)}`;
        fc.pre(edited !== cursor);
        let served: string;
        try {
          served = decodeCursor(scope, edited);
        } catch (error) {
          expect(error).toMatchObject({ refusal: 'invalid', messageKey: 'invalidCursor' });
          return;
        }
        expect(served).not.toBe(continuation);
      }),
      { numRuns: 2_000 },
    );
  });
});
