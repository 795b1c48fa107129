import { ApiError } from '../errors.js';

/** Cosmos's `_etag` as an HTTP strong entity tag. */
export function entityTag(cosmosEtag: string): string {
  return `"${cosmosEtag.replace(/"/g, '')}"`;
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
    if (!match[1]) tags.push(match[2]!);
  }
  return tags;
}

export function satisfies(condition: IfMatch, cosmosEtag: string): boolean {
  if (condition === undefined || condition === '*') return true;
  return condition.includes(cosmosEtag.replace(/"/g, ''));
}

/** If-None-Match on a read: true when the client's copy is current (answer 304). */
export function isNotModified(header: string | null, cosmosEtag: string): boolean {
  if (header === null) return false;
  if (header.trim() === '*') return true;
  const current = cosmosEtag.replace(/"/g, '');
  return header.split(',').some((member) => /^\s*(?:W\/)?"([^"]*)"\s*$/.exec(member)?.[1] === current);
}
