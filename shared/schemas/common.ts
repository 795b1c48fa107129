import { z } from 'zod';
import type { MessageKey } from '../messages/catalog.js';
import { integerParameter, patterned, text } from './validation.js';

/**
 * A path parameter naming a resource: its form, the 404 a value of any other form gets (it cannot
 * name anything, so no database is asked), and an example for the API description.
 */
export interface PathParameter {
  schema: z.ZodType<string, string>;
  notFound: MessageKey;
  example: string;
}

export const timestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC timestamp with milliseconds');

/**
 * A time a list filters by: ISO 8601 with a time zone, turned into UTC text, which Cosmos compares with
 * the stored timestamps as text. Only the years 0000 to 9999 keep that text's four-digit form: a later
 * or an earlier time would read `+010000-…` or `-000001-…` and sort before every stored time, so it is
 * refused rather than taken to mean every event.
 */
export function timeParameter(description: string) {
  return z.iso
    .datetime({ offset: true })
    .transform((value) => new Date(value).toISOString())
    .pipe(patterned(/^\d{4}-/, 'timeOutOfRange'))
    .describe(`${description} (ISO 8601 with a time zone, from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z)`);
}

/** What the API keeps on a project and on a task: when it was made and last changed, and by whom it was made. */
export const recordStamps = {
  createdAt: timestamp,
  updatedAt: timestamp,
  createdBy: z.string().describe("The creator's Entra object id (oid)"),
};

/** A project's name, a task's title: one line of 1 to 200 characters. */
export const recordTitle = text({ min: 1, max: 200 });
/** A project's or a task's description: up to 10,000 characters, line breaks allowed. */
export const recordDescription = text({ min: 0, max: 10_000, multiline: true });

/** `limit` and `cursor`, as every list endpoint takes them. */
export const pagingParameters = {
  limit: integerParameter({ min: 1, max: 200, default: 50 }),
  // As a Link header gave it; a malformed one gets the message a tampered one gets.
  cursor: patterned(/^[\w-]+$/, 'invalidCursor')
    .min(1)
    .max(4096)
    .optional(),
};

/** A list's `sort`: each field ascending, or descending with a leading `-`. */
export function sortParameter<const Field extends string>(fields: readonly Field[]) {
  return z.enum(fields.flatMap((field) => [field, `-${field}` as const]));
}

export const errorBody = z.object({
  error: z.string(),
  message: z.string(),
  status: z.number().int(),
  requestId: z.string().optional(),
  details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  // The fields some errors add: declared here, so that generated clients read them and answers carry no other.
  claims: z.string().optional().describe("A 401 of On-Behalf-Of's `interactionRequired`: the claims challenge to sign the user in again with"),
  activeJobId: z.string().optional().describe("The 409 of `POST /api/rag/index` (`ragJobActive`): the tenant's active RAG job"),
});

/**
 * A list item's schema: the resource as a read of it shows it, and `etag`, the ETag that read answers,
 * so that a change after a list needs no read first (If-Match takes it as it is). `endpoint()` fills
 * `etag` in each item of a page whose item schema has one.
 */
export function listedWithETag<R extends z.ZodObject>(resource: R) {
  return resource.extend({
    etag: z.string().describe('The ETag a read of this resource answers now: send it in If-Match to change this version, without reading it first'),
  });
}
