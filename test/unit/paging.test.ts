import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../shared/data/paging.js';

// The app reads its signing key from its settings on first use.
process.env.CURSOR_SIGNING_KEY = randomBytes(32).toString('base64');

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
      expect.objectContaining({ status: 400, messageKey: 'cursorForOtherQuery' }),
    );
  });

  it('refuse garbage and edited cursors', () => {
    expect(() => decodeCursor(scope, 'bm90LWpzb24')).toThrow(expect.objectContaining({ status: 400, messageKey: 'invalidCursor' }));
    const body = JSON.parse(Buffer.from(encodeCursor(scope, 'continuation'), 'base64url').toString()) as { c: string };
    body.c = 'edited';
    expect(() => decodeCursor(scope, Buffer.from(JSON.stringify(body)).toString('base64url'))).toThrow(expect.objectContaining({ status: 400 }));
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
      expect(() => decodeCursor(scope, other), other).toThrow(expect.objectContaining({ status: 400, messageKey: 'invalidCursor' }));
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
          expect(error).toMatchObject({ status: 400, messageKey: 'invalidCursor' });
          return;
        }
        expect(served).not.toBe(continuation);
      }),
      { numRuns: 2_000 },
    );
  });
});
