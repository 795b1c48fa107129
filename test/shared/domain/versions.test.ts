import { describe, expect, it } from 'vitest';
import { satisfies, versionOf } from '../../../shared/domain/versions.js';

describe('versions', () => {
  it('are 27 characters of the SHA-256 of what is shown, base64url', () => {
    expect(versionOf({ id: 'PRJ-1' })).toBe('uvVSI86ekdMe3fqJ6A3qcG3LDxs');
    expect(versionOf({ id: 'PRJ-1' })).toMatch(/^[\w-]{27}$/);
    expect(versionOf({ id: 'PRJ-2' })).not.toBe(versionOf({ id: 'PRJ-1' }));
  });

  it('satisfy any expectation when nothing or "*" is asked, else only one of those listed', () => {
    expect(satisfies(undefined, 'a')).toBe(true);
    expect(satisfies('*', 'a')).toBe(true);
    expect(satisfies(['b', 'a'], 'a')).toBe(true);
    expect(satisfies(['b'], 'a')).toBe(false);
  });
});
