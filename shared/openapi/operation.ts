import type { HttpHandler } from '@azure/functions';
import type { z } from 'zod';
import type { MessageKey } from '../messages.js';

/** Request headers an operation may honour; each brings the answers it can cause (If-Match: 412, …). */
export type HonouredHeader = 'If-Match' | 'If-None-Match' | 'Idempotency-Key';

/** Headers a successful answer may carry. */
export type SuccessHeader = 'ETag' | 'Location' | 'Link';

/**
 * What the API description says about an operation beyond what its registration (route, methods)
 * and its definition (permission, query and body schemas) already say.
 */
export interface OperationDocs {
  summary: string;
  /** Markdown, for what a caller needs to know that the schemas cannot say. */
  description?: string;
  /** The answer when all goes well. `body` is a zod schema (none for 204); JSON unless `mediaTypes` says otherwise. */
  success: { status: 200 | 201 | 202 | 204; body?: z.ZodType; headers?: SuccessHeader[]; mediaTypes?: string[] };
  honours?: HonouredHeader[];
  /**
   * The failures particular to this operation, by status, named by the message keys they are
   * thrown with. Those every operation shares (authentication, validation, outages) are added by
   * the document builder.
   */
  errors?: Partial<Record<number, MessageKey[]>>;
}

/** A handler that needs no token, carrying its docs as endpoint() handlers carry their definition. */
export function publicOperation(docs: OperationDocs, handler: HttpHandler): HttpHandler & { definition: { docs: OperationDocs } } {
  return Object.assign(handler, { definition: { docs } });
}
