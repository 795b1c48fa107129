import { hash } from 'node:crypto';
import { ApiError } from '../errors.js';

/**
 * A strong entity tag computed from the representation the API shows. Internal bookkeeping that
 * rewrites a stored document (a task added to a project, say) leaves it unchanged, so clients'
 * If-Match only fails when what they read has really changed.
 */
export function entityTag(representation: unknown): string {
  return `"${hash('sha256', JSON.stringify(representation), 'base64url').slice(0, 27)}"`;
}

/** `*` (any current version) or the opaque tags a client accepts, or undefined without the header. */
export type IfMatch = '*' | string[] | undefined;

const LIST_MEMBER = /^\s*(W\/)?"([^"]*)"\s*$/;

export function parseIfMatch(header: string | null): IfMatch {
  if (header === null) return undefined;
  if (header.trim() === '*') return '*';
  const tags: string[] = [];
  for (const member of header.split(',')) {
    const match = LIST_MEMBER.exec(member);
    if (!match) throw new ApiError(400, 'invalidIfMatch');
    // If-Match uses strong comparison (RFC 9110 13.1.1): a weak tag never matches.
    if (!match[1]) tags.push(`"${match[2]!}"`);
  }
  return tags;
}

export function satisfies(condition: IfMatch, tag: string): boolean {
  if (condition === undefined || condition === '*') return true;
  return condition.includes(tag);
}

/** If-None-Match on a read: true when the client's copy is current (answer 304). Weak comparison. */
export function isNotModified(header: string | null, tag: string): boolean {
  if (header === null) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((member) => /^\s*(?:W\/)?("[^"]*")\s*$/.exec(member)?.[1] === tag);
}
