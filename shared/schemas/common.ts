import { z } from 'zod';
import { integerParameter } from '../validation.js';

export const timestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC timestamp with milliseconds');

/** `limit` and `cursor`, as every list endpoint takes them. */
export const pagingParameters = {
  limit: integerParameter({ min: 1, max: 200, default: 50 }),
  cursor: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^[\w-]+$/)
    .optional(),
};

export const errorBody = z.object({
  error: z.string(),
  message: z.string(),
  status: z.number().int(),
  requestId: z.string().optional(),
  details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});
