import { randomUUID } from 'node:crypto';
import type { Principal } from '../../shared/auth/principal.js';

/** A signed-in admin as `authenticate()` hands one to the app: of a tenant of its own, unless one is named. */
export function adminCaller(tenantId: string = randomUUID()): Principal {
  return { tenantId, objectId: randomUUID(), kind: 'user', roles: ['LMS.Admin'], email: 'owner@contoso.test', displayName: undefined, accessToken: 'x' };
}
