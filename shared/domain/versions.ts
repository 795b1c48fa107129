import { hash } from 'node:crypto';

/**
 * The version of a resource as the API shows it, computed from what is shown: bookkeeping that
 * rewrites a stored document without changing the resource leaves the version as it was, so a
 * conditional change fails only when what its caller read has really changed.
 */
export function versionOf(resource: unknown): string {
  return hash('sha256', JSON.stringify(resource), 'base64url').slice(0, 27);
}

/** What a conditional change expects to find: any version (`*`), one of these, or nothing asked (the last write wins). */
export type ExpectedVersion = '*' | readonly string[] | undefined;

export function satisfies(expected: ExpectedVersion, version: string): boolean {
  if (expected === undefined || expected === '*') return true;
  return expected.includes(version);
}
