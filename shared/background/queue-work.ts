import type { InvocationContext } from '@azure/functions';
import type { ZodType } from 'zod';

/**
 * A queue-triggered function's handler, for work that must fit `schema`. A message that does not fit
 * can never succeed: it is dropped with a warning naming `expected`, rather than retried until it
 * reaches the poison queue. Anything `handle` throws goes back to the host, which retries the message.
 */
export function queueWork<Work>(schema: ZodType<Work>, expected: string, handle: (work: Work, context: InvocationContext) => Promise<void>) {
  return async (message: unknown, context: InvocationContext): Promise<void> => {
    const parsed = schema.safeParse(message);
    if (!parsed.success) return context.warn(`Dropping a ${expected}`);
    await handle(parsed.data, context);
  };
}
