import { describe, expect, it } from 'vitest';
import type { Principal } from '../../shared/auth/principal.js';
import { HOME_TENANT, stack } from '../support/stack.js';

// The repository runs in this process against the test stack's database, so time can be set.
process.env.COSMOS_CONNECTION = stack.cosmosConnectionString;
process.env.COSMOS_DATABASE = 'lms';
const { getCurrentUser, recordCaller } = await import('../../shared/data/users-repository.js');

function principal(objectId: string, roles: Principal['roles'] = ['LMS.Reader']): Principal {
  return { tenantId: HOME_TENANT, objectId, kind: 'user', roles, email: 'clock@contoso.test', displayName: 'Clock', accessToken: 'unused' };
}

describe('recording callers', () => {
  it('writes on first use, then at most every 15 minutes', async () => {
    const caller = principal(crypto.randomUUID());
    const start = Date.parse('2027-01-01T09:00:00.000Z');
    await recordCaller(caller, start);
    expect((await getCurrentUser(caller)).lastSeenAt).toBe('2027-01-01T09:00:00.000Z');
    await recordCaller(caller, start + 14 * 60_000);
    expect((await getCurrentUser(caller)).lastSeenAt).toBe('2027-01-01T09:00:00.000Z');
    await recordCaller(caller, start + 16 * 60_000);
    const refreshed = await getCurrentUser(caller);
    expect(refreshed.lastSeenAt).toBe('2027-01-01T09:16:00.000Z');
    expect(refreshed.createdAt).toBe('2027-01-01T09:00:00.000Z');
  });

  it('never records an app-only caller', async () => {
    const app: Principal = { ...principal(crypto.randomUUID()), kind: 'app', email: undefined };
    await recordCaller(app);
    await expect(getCurrentUser(app)).rejects.toMatchObject({ status: 404 });
  });
});
