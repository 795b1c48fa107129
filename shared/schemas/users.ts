import { z } from 'zod';
import { ROLES } from '../roles.js';
import { text } from './validation.js';
import { pagingParameters, timestamp } from './common.js';

export const user = z.object({
  id: z.string().describe("The user's Entra object id (oid)"),
  email: z.string().nullable(),
  displayName: z.string().nullable(),
  roles: z.array(z.enum(ROLES)),
  createdAt: timestamp.nullable().describe('When the user first called the API (null for directory users)'),
  lastSeenAt: timestamp.nullable().describe('Refreshed at most every 15 minutes (null for directory users)'),
});
export type User = z.infer<typeof user>;

/** `recorded`: the users who have called the API; `directory`: the tenant's users from Microsoft Graph. */
export const USER_SOURCES = ['recorded', 'directory'] as const;

export const listUsersQuery = z.strictObject({
  q: text({ min: 1, max: 200 })
    .transform((value) => value.toLowerCase())
    .optional(),
  role: z.enum(ROLES).optional(),
  source: z.enum(USER_SOURCES).default('recorded'),
  ...pagingParameters,
});
export type ListUsersQuery = z.infer<typeof listUsersQuery>;
