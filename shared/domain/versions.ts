import { hash } from 'node:crypto';
import { z } from 'zod';

/**
 * The version of a resource as the API shows it, computed from what is shown: bookkeeping that
 * rewrites a stored document without changing the resource leaves the version as it was, so a
 * conditional change fails only when what its caller read has really changed.
 */
export function versionOf(resource: unknown): string {
  return hash('sha256', JSON.stringify(resource), 'base64url').slice(0, 27);
}

/** The schemas of bodies that show a resource and something beside it that is no part of it (a secret, shown once), and the resource's. */
const resourcesShown = new WeakMap<z.ZodType, z.ZodObject>();

/**
 * A body's schema (the resource's, extended): the resource and, beside it, fields that are no part
 * of the resource (a secret shown once). Such a body names the resource's version, not one of its
 * own: its ETag is the one a read of the resource gives, so that a client can send it in If-Match.
 */
export function resourceAndMore<B extends z.ZodObject>(resource: z.ZodObject, body: B): B {
  resourcesShown.set(body, resource);
  return body;
}

/** The schemas of list items that carry their resource's ETag. */
const taggedItems = new WeakSet<z.ZodType>();

/**
 * A list item's schema: the resource as a read of it shows it, and `etag`, the ETag that read answers,
 * so that a change after a list needs no read first (If-Match takes it as it is). Its version is the
 * resource's: the etag is no part of what it tags.
 */
export function listedWithETag<R extends z.ZodObject>(resource: R) {
  const item = resourceAndMore(
    resource,
    resource.extend({
      etag: z.string().describe('The ETag a read of this resource answers now: send it in If-Match to change this version, without reading it first'),
    }),
  );
  taggedItems.add(item);
  return item;
}

/** Whether a page's items, of this schema, each carry their resource's ETag. */
export function carriesETag(itemSchema: z.ZodType): boolean {
  return taggedItems.has(itemSchema);
}

/**
 * What the version of a body of this schema is computed from: the body, or for a body that shows
 * more than its resource (`resourceAndMore`), the resource's fields in the resource's order, as a
 * read of it shows them.
 */
export function versionedPart(schema: z.ZodType | undefined, body: unknown): unknown {
  const resource = schema && resourcesShown.get(schema);
  if (!resource) return body;
  return Object.fromEntries(Object.keys(resource.shape).map((name) => [name, (body as Record<string, unknown>)[name]]));
}

/** What a conditional change expects to find: any version (`*`), one of these, or nothing asked (the last write wins). */
export type ExpectedVersion = '*' | readonly string[] | undefined;

export function satisfies(expected: ExpectedVersion, version: string): boolean {
  if (expected === undefined || expected === '*') return true;
  return expected.includes(version);
}
