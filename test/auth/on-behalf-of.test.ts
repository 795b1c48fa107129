import { decodeJwt } from 'jose';
import { describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../shared/auth/principal.js';
import { CLIENT_ID, HOME_TENANT, stack, token } from '../support/stack.js';

/** The module under test, loaded afresh with these settings (settings are read once per process). */
async function onBehalfOfWith(authorityHost: string) {
  vi.resetModules();
  Object.assign(process.env, { AUTH_TENANT_ID: HOME_TENANT, AUTH_CLIENT_ID: CLIENT_ID, AUTH_AUTHORITY_HOST: authorityHost, AUTH_CLIENT_SECRET: 'local' });
  return (await import('../../shared/auth/on-behalf-of.js')).onBehalfOf;
}

async function caller(username = 'obo-user@contoso.test'): Promise<Principal> {
  const accessToken = await token({ roles: ['LMS.Reader'], username });
  return { tenantId: HOME_TENANT, objectId: decodeJwt(accessToken).oid as string, kind: 'user', roles: ['LMS.Reader'], email: username, displayName: undefined, accessToken };
}

describe('On-Behalf-Of with msal-node', () => {
  it('exchanges the caller token for a Graph token of the same user, and reuses it while valid', async () => {
    const onBehalfOf = await onBehalfOfWith(stack.authorityHost);
    const principal = await caller();
    const first = await onBehalfOf(principal, ['https://graph.microsoft.com/User.Read.All']);
    const claims = decodeJwt(first);
    expect(claims).toMatchObject({ aud: 'https://graph.microsoft.com', oid: principal.objectId, tid: HOME_TENANT, scp: 'User.Read.All' });
    // The provider stamps each token it issues with a unique id: the same string means no new exchange.
    expect(await onBehalfOf(principal, ['https://graph.microsoft.com/User.Read.All'])).toBe(first);
  });

  it('refuses app-only callers with a 403 before asking anyone', async () => {
    const onBehalfOf = await onBehalfOfWith(stack.authorityHost);
    await expect(onBehalfOf({ ...(await caller()), kind: 'app' }, ['https://graph.microsoft.com/User.Read.All'])).rejects.toMatchObject({ status: 403 });
  });

  it('reports an unreachable identity provider as a dependency failure (503)', async () => {
    const onBehalfOf = await onBehalfOfWith('https://localhost:1');
    const failure = await onBehalfOf(await caller('unreachable@contoso.test'), ['https://graph.microsoft.com/User.Read.All']).catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'DependencyUnavailableError', dependency: 'identityProvider' });
  });
});
