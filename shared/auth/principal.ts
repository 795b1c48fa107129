import type { Role } from '../roles.js';

/** Who is calling, taken only from a verified token. Users are identified by (tenantId, objectId). */
export interface Principal {
  tenantId: string;
  objectId: string;
  kind: 'user' | 'app';
  roles: Role[];
  /** Shown and stored, never used to authorise. Absent for app-only tokens. */
  email: string | undefined;
  displayName: string | undefined;
  /** The verified raw token, kept for On-Behalf-Of; never logged. */
  accessToken: string;
}
