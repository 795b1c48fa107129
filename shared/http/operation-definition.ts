import type { HttpHandler } from '@azure/functions';
import type { z } from 'zod';
import type { Permission } from '../roles.js';
import type { MessageKey } from '../messages/catalog.js';
import type { PathParameter } from '../schemas/common.js';

/** Request headers an operation may honour; each brings the answers it can cause (If-Match: 412, …). */
export type HonouredHeader = 'If-Match' | 'If-None-Match' | 'Idempotency-Key';

/** Headers a successful answer may carry. */
export type SuccessHeader = 'ETag' | 'Location' | 'Link';

/** The answer when all goes well. `body` is a zod schema (none for 204); JSON unless `mediaTypes` says otherwise. */
export interface SuccessAnswer {
  status: 200 | 201 | 202 | 204;
  body?: z.ZodType;
  /**
   * For a body that shows more than its resource (a secret, shown once): the resource's schema. The
   * ETag is then the resource's version, as a read of it tags it, so that a client can send it in If-Match.
   */
  versionOf?: z.ZodObject;
  headers?: SuccessHeader[];
  mediaTypes?: string[];
  /** For work that goes on after the answer: the seconds to wait before looking at `Location`, sent as `Retry-After`. */
  retryAfterSeconds?: number;
}

/**
 * An operation announced for removal (RFC 9745 `Deprecation`, RFC 8594 `Sunset`): its answers say
 * so, and so does the API description. Dates are ISO 8601.
 */
export interface Deprecation {
  since: string;
  sunset: string;
  /** Where the replacement is described. */
  link?: string;
}

/** What the API description says beyond what the definition already states. */
export interface OperationDocs {
  summary: string;
  /** Markdown, for what a caller needs to know that the schemas cannot say. */
  description?: string;
  /**
   * The failures particular to this operation, by status, named by the message keys they are
   * thrown with. Those every operation shares (authentication, validation, outages) and those its
   * traits bring (a body, If-Match, a path parameter's 404, …) are added by the document builder.
   */
  errors?: Partial<Record<number, MessageKey[]>>;
}

/**
 * What an operation accepts and answers: the HTTP edge acts on it (endpoint(), publicOperation())
 * and the API description is built from it (shared/openapi). Nothing is stated twice.
 */
export interface OperationDefinition {
  /** Absent for the API's own description, which needs no token. */
  permission?: Permission;
  params?: Record<string, PathParameter>;
  query?: z.ZodType;
  body?: z.ZodType;
  honours?: HonouredHeader[];
  success: SuccessAnswer;
  deprecated?: Deprecation;
  docs: OperationDocs;
}

export type DescribedHandler = HttpHandler & { readonly definition: OperationDefinition };

/**
 * A body schema with no required field takes an empty object, so the request may leave the body out:
 * no body means every default. One rule for every operation, not a list of exceptions.
 */
export function bodyMayBeOmitted(body: z.ZodType): boolean {
  return body.safeParse({}).success;
}
