import { randomBytes } from 'node:crypto';
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
});
