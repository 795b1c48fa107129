import { describe, expect, it } from 'vitest';
import { satisfies } from '../../../shared/domain/versions.js';
import { entityTag, isNotModified, parseIfMatch } from '../../../shared/http/etag.js';

describe('entity tags', () => {
  it('are strong, quoted, and follow the representation only', () => {
    const tag = entityTag({ id: 'PRJ-1', name: 'A' });
    expect(tag).toMatch(/^"[\w-]{27}"$/);
    expect(entityTag({ id: 'PRJ-1', name: 'A' })).toBe(tag);
    expect(entityTag({ id: 'PRJ-1', name: 'B' })).not.toBe(tag);
  });

  it('parses If-Match lists, star, and drops weak tags (strong comparison)', () => {
    expect(parseIfMatch(null)).toBeUndefined();
    expect(parseIfMatch('*')).toBe('*');
    expect(parseIfMatch(' * ')).toBe('*');
    expect(parseIfMatch('"a", "b"')).toEqual(['"a"', '"b"']);
    expect(parseIfMatch('W/"a", "b"')).toEqual(['"b"']);
  });

  it('ignores empty members of an If-Match list, as RFC 9110 asks', () => {
    expect(parseIfMatch('"a",,"b"')).toEqual(['"a"', '"b"']);
    expect(parseIfMatch(', "a" ,')).toEqual(['"a"']);
    expect(parseIfMatch('"a", ,"b"')).toEqual(['"a"', '"b"']);
  });

  it('refuses a malformed If-Match with a 400', () => {
    for (const header of ['a', '"a', '', ' , ,', 'x"a"', '"a"x', '"a" "b"', '**', '"a", b']) {
      expect(() => parseIfMatch(header)).toThrow(expect.objectContaining({ status: 400, messageKey: 'invalidIfMatch' }));
    }
  });

  it('compares against the current tag', () => {
    expect(satisfies(undefined, '"x"')).toBe(true);
    expect(satisfies('*', '"x"')).toBe(true);
    expect(satisfies(['"x"'], '"x"')).toBe(true);
    expect(satisfies(['"y"'], '"x"')).toBe(false);
    expect(satisfies([], '"x"')).toBe(false);
  });

  it('answers If-None-Match, weak tags included', () => {
    expect(isNotModified('"x"', '"x"')).toBe(true);
    expect(isNotModified('W/"x"', '"x"')).toBe(true);
    expect(isNotModified('"y", "x"', '"x"')).toBe(true);
    expect(isNotModified('"y"', '"x"')).toBe(false);
    expect(isNotModified(null, '"x"')).toBe(false);
    expect(isNotModified('*', '"x"')).toBe(true);
    expect(isNotModified(' * ', '"x"')).toBe(true);
  });

  it('ignores an If-None-Match member that is not an entity tag: the full answer, never an error', () => {
    expect(isNotModified('x', '"x"')).toBe(false);
    expect(isNotModified('garbage, "x"', '"x"')).toBe(true);
    for (const header of ['y"x"', '"x"y', '"x" "y"', '', '**']) expect(isNotModified(header, '"x"')).toBe(false);
  });
});
