import { describe, expect, it } from 'vitest';
import { preferredLanguage } from '../../shared/http/language.js';

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
  ])('reads %j as %s', (header, expected) => {
    expect(preferredLanguage(header)).toBe(expected);
  });
});
