import { versionOf, type ExpectedVersion } from '../domain/versions.js';
import { ApiError } from '../errors.js';

/** A strong entity tag: the version of exactly the representation sent, quoted. */
export function entityTag(representation: unknown): string {
  return `"${versionOf(representation)}"`;
}

/** `*` (any current version) or the tags a client accepts, as sent, or undefined without the header. */
export type IfMatch = '*' | string[] | undefined;

const LIST_MEMBER = /^\s*(W\/)?"([^"]*)"\s*$/;

export function parseIfMatch(header: string | null): IfMatch {
  if (header === null) return undefined;
  if (header.trim() === '*') return '*';
  const tags: string[] = [];
  // Empty list members are ignored (RFC 9110 5.6.1.2); a header with nothing else is malformed.
  const members = header.split(',').filter((member) => member.trim() !== '');
  if (members.length === 0) throw new ApiError(400, 'invalidIfMatch');
  for (const member of members) {
    const match = LIST_MEMBER.exec(member);
    if (!match) throw new ApiError(400, 'invalidIfMatch');
    // If-Match uses strong comparison (RFC 9110 13.1.1): a weak tag never matches.
    if (!match[1]) tags.push(`"${match[2]!}"`);
  }
  return tags;
}

/** If-Match as the versions a change expects to find. */
export function expectedVersion(header: string | null): ExpectedVersion {
  const ifMatch = parseIfMatch(header);
  return Array.isArray(ifMatch) ? ifMatch.map((tag) => tag.slice(1, -1)) : ifMatch;
}

/** If-None-Match on a read: true when the client's copy is current (answer 304). Weak comparison. */
export function isNotModified(header: string | null, tag: string): boolean {
  if (header === null) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((member) => /^\s*(?:W\/)?("[^"]*")\s*$/.exec(member)?.[1] === tag);
}
