/** The app roles of the Entra app registration (values of the `roles` claim), exactly as spelled there. */
export const ROLES = ['LMS.Reader', 'LMS.Member', 'LMS.Manager', 'LMS.Admin'] as const;
export type Role = (typeof ROLES)[number];

/** What each role may do: the contract's role table, one row per permission. */
export const PERMISSIONS = {
  'projects:read': ['LMS.Reader', 'LMS.Member', 'LMS.Manager', 'LMS.Admin'],
  'tasks:read': ['LMS.Reader', 'LMS.Member', 'LMS.Manager', 'LMS.Admin'],
  'users:read': ['LMS.Reader', 'LMS.Member', 'LMS.Manager', 'LMS.Admin'],
  'events:read': ['LMS.Reader', 'LMS.Member', 'LMS.Manager', 'LMS.Admin'],
  'tasks:write': ['LMS.Member', 'LMS.Manager', 'LMS.Admin'],
  'tasks:delete': ['LMS.Manager', 'LMS.Admin'],
  'projects:write': ['LMS.Manager', 'LMS.Admin'],
  'projects:delete': ['LMS.Admin'],
  'rag:run': ['LMS.Manager', 'LMS.Admin'],
  'webhooks:manage': ['LMS.Admin'],
} as const satisfies Record<string, readonly Role[]>;
export type Permission = keyof typeof PERMISSIONS;

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function allows(roles: readonly Role[], permission: Permission): boolean {
  const allowed: readonly Role[] = PERMISSIONS[permission];
  return roles.some((role) => allowed.includes(role));
}

/** The events of RAG jobs are read only by callers who may run them; every other event, by any with events:read. */
export const readsRagJobEvents = (roles: readonly Role[]): boolean => allows(roles, 'rag:run');
