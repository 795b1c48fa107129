import { describe, expect, it } from 'vitest';
import { ApiError } from '../../shared/errors.js';
import { entityTag, isNotModified, parseIfMatch, satisfies } from '../../shared/http/etag.js';

describe('entity tags', () => {
  it('quotes a Cosmos etag whether or not it is quoted already', () => {
    expect(entityTag('abc')).toBe('"abc"');
    expect(entityTag('"abc"')).toBe('"abc"');
  });

  it('parses If-Match lists, star, and drops weak tags (strong comparison)', () => {
    expect(parseIfMatch(null)).toBeUndefined();
    expect(parseIfMatch('*')).toBe('*');
    expect(parseIfMatch('"a", "b"')).toEqual(['a', 'b']);
    expect(parseIfMatch('W/"a", "b"')).toEqual(['b']);
  });

  it('refuses a malformed If-Match with a 400', () => {
    for (const header of ['a', '"a', '"a",,', '']) {
      expect(() => parseIfMatch(header)).toThrow(ApiError);
    }
  });

  it('compares against the stored version', () => {
    expect(satisfies(undefined, '"x"')).toBe(true);
    expect(satisfies('*', '"x"')).toBe(true);
    expect(satisfies(['x'], '"x"')).toBe(true);
    expect(satisfies(['y'], '"x"')).toBe(false);
    expect(satisfies([], '"x"')).toBe(false);
  });

  it('answers If-None-Match, weak tags included', () => {
    expect(isNotModified('"x"', 'x')).toBe(true);
    expect(isNotModified('W/"x"', 'x')).toBe(true);
    expect(isNotModified('"y"', 'x')).toBe(false);
    expect(isNotModified(null, 'x')).toBe(false);
  });
});
