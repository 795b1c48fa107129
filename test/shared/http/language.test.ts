import { describe, expect, it } from 'vitest';
import { preferredLanguage } from '../../../shared/http/language.js';

describe('preferredLanguage', () => {
  it.each([
    [null, 'en'],
    ['', 'en'],
    ['ja', 'ja'],
    ['ja-JP,ja;q=0.9,en;q=0.8', 'ja'],
    ['en-US,en;q=0.9,ja;q=0.8', 'en'],
    ['fr, ja;q=0.5', 'ja'],
    ['fr, de', 'en'],
    ['ja;q=0', 'en'],
    ['ja;q=abc', 'en'],
    ['en;q=0.4, ja;q=0.6', 'ja'],
    ['en;q=0.4,  JA-jp ; q=0.6 ', 'ja'],
    ['ja;q=2, en;q=0.5', 'en'],
    ['ja ; q=0.3, en;q=0.5', 'en'],
    ['en, ja', 'en'],
    ['ja, en', 'ja'],
    ['en;q=0.5, ja;x=0;q=0.8', 'ja'],
    // Only the first 32 ranges are read: a header of thousands costs no more than that.
    [`${'fr, '.repeat(32)}ja`, 'en'],
    [`${'fr, '.repeat(31)}ja`, 'ja'],
  ])('reads %j as %s', (header, expected) => {
    expect(preferredLanguage(header)).toBe(expected);
  });
});
