import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { generate } from 'selfsigned';
import { describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../shared/auth/principal.js';
import { CLIENT_ID, HOME_TENANT, stack, token } from '../support/stack.js';

/** The module under test, loaded afresh with these settings (settings are read once per process). */
async function onBehalfOfWith(authorityHost: string, credential: Record<string, string> = { AUTH_CLIENT_SECRET: 'local' }) {
  vi.resetModules();
  delete process.env.AUTH_CLIENT_SECRET;
  delete process.env.AUTH_CLIENT_CERTIFICATE_PATH;
  Object.assign(process.env, { AUTH_TENANT_ID: HOME_TENANT, AUTH_CLIENT_ID: CLIENT_ID, AUTH_AUTHORITY_HOST: authorityHost, ...credential });
  return (await import('../../shared/auth/on-behalf-of.js')).onBehalfOf;
}

async function caller(username = 'obo-user@contoso.test'): Promise<Principal> {
  const accessToken = await token({ roles: ['LMS.Reader'], username });
  return {
    tenantId: HOME_TENANT,
    objectId: decodeJwt(accessToken).oid as string,
    kind: 'user',
    roles: ['LMS.Reader'],
    email: username,
    displayName: undefined,
    accessToken,
  };
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

  it('signs in with a certificate when one is configured instead of a secret', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'obo-certificate-'));
    try {
      const pems = await generate([{ name: 'commonName', value: 'LMS API client credential' }], { keySize: 2048, algorithm: 'sha256' });
      const certificatePath = join(folder, 'credential.pem');
      await writeFile(certificatePath, `${pems.private}\n${pems.cert}`);
      const onBehalfOf = await onBehalfOfWith(stack.authorityHost, { AUTH_CLIENT_CERTIFICATE_PATH: certificatePath });
      const principal = await caller('certificate-user@contoso.test');
      // appidacr 2: the client proved itself with a certificate (1 would be a secret).
      expect(decodeJwt(await onBehalfOf(principal, ['https://graph.microsoft.com/User.Read.All'])).appidacr).toBe('2');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
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
