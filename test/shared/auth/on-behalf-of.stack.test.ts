import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { generate } from 'selfsigned';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { LOCAL_APP_IDENTITY_CLIENT_ID } from '../../../local/defaults.js';
import { servicePrincipalObjectId } from '../../../local/identity/provider.js';
import { startHostProcess } from '../../../local/stack.js';
import type { Principal } from '../../../shared/auth/principal.js';
import { ON_BEHALF_OF_CREDENTIALS } from '../../../shared/settings/read.js';
import { startSmallServer } from '../../support/small-server.js';
import { CLIENT_ID, HOME_TENANT, signToken, stack, stackAppSettings, token } from '../../support/stack.js';

/** The module under test, loaded afresh with these settings (settings are read once per process). */
async function onBehalfOfWith(authorityHost: string, credential: Record<string, string> = { AUTH_CLIENT_SECRET: 'local' }) {
  vi.resetModules();
  for (const name of ON_BEHALF_OF_CREDENTIALS) delete process.env[name];
  Object.assign(process.env, { AUTH_TENANT_ID: HOME_TENANT, AUTH_CLIENT_ID: CLIENT_ID, AUTH_AUTHORITY_HOST: authorityHost, ...credential });
  return (await import('../../../shared/auth/on-behalf-of.js')).onBehalfOf;
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

  it("signs in with the managed identity's token as its client assertion, which the registration's federated credential trusts", async () => {
    // The stack's identity provider serves App Service's managed identity endpoint, as the shared host uses it.
    Object.assign(process.env, stack.managedIdentity);
    const onBehalfOf = await onBehalfOfWith(stack.authorityHost, { AUTH_MANAGED_IDENTITY_CLIENT_ID: LOCAL_APP_IDENTITY_CLIENT_ID });
    const principal = await caller('federated-user@contoso.test');
    // appidacr 2: the client proved itself with an assertion, not a secret (1).
    expect(decodeJwt(await onBehalfOf(principal, ['https://graph.microsoft.com/User.Read.All']))).toMatchObject({ oid: principal.objectId, appidacr: '2' });
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

describe("the app's directory call with a managed identity's assertion", () => {
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  /**
   * A host whose managed identity endpoint (App Service's protocol) hands out the identity's token with `changes`:
   * the stack's identity provider signs it, so only the claims changed decide whether the assertion is trusted.
   */
  async function directoryWithAssertion(changes: Record<string, unknown>) {
    const now = Math.floor(Date.now() / 1000);
    const objectId = servicePrincipalObjectId(HOME_TENANT, LOCAL_APP_IDENTITY_CLIENT_ID);
    const claims = {
      ...{ aud: 'api://AzureADTokenExchange', iss: `${stack.authorityHost}/${HOME_TENANT}/v2.0`, sub: objectId, oid: objectId, tid: HOME_TENANT },
      ...{ azp: LOCAL_APP_IDENTITY_CLIENT_ID, azpacr: '2', idtyp: 'app', ver: '2.0', iat: now, nbf: now, exp: now + 3600, ...changes },
    };
    const endpoint = await startSmallServer((_request, response) => {
      void signToken(claims).then((accessToken) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ access_token: accessToken, expires_on: String(claims.exp), resource: claims.aud, token_type: 'Bearer' }));
      });
    });
    stops.push(() => endpoint.close());
    const host = await startHostProcess({
      port: 0,
      environment: {
        ...stackAppSettings,
        GRAPH_BASE_URL: stack.graphBaseUrl,
        AUTH_MANAGED_IDENTITY_CLIENT_ID: LOCAL_APP_IDENTITY_CLIENT_ID,
        IDENTITY_ENDPOINT: `${endpoint.url}/msi/token`,
        IDENTITY_HEADER: 'local-identity-header',
      },
      extraCaCerts: stack.caCertPath,
    });
    stops.push(host.stop);
    const reader = await token({ roles: ['LMS.Reader'], username: `directory-${crypto.randomUUID().slice(0, 8)}@contoso.test` });
    const response = await fetch(`http://127.0.0.1:${host.port}/api/users?source=directory&limit=1`, { headers: { authorization: `Bearer ${reader}` } });
    expect(endpoint.hits.length, 'the host asked its managed identity endpoint').toBeGreaterThan(0);
    return { status: response.status, body: await response.json() };
  }

  it('reads the directory when the assertion is what the federated credential names', async () => {
    const { status, body } = await directoryWithAssertion({});
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body).toHaveLength(1);
  }, 60_000);

  it.each([
    ['another audience', { aud: 'api://AzureADTokenExchangeUSGov' }],
    ['another issuer', { iss: `https://sts.windows.net/${HOME_TENANT}/` }],
  ])(
    'fails closed when the assertion has %s: the identity provider refuses it, and no user is listed',
    async (_case, changes) => {
      const { status, body } = await directoryWithAssertion(changes);
      expect(status).toBe(500);
      expect(body).not.toBeInstanceOf(Array);
    },
    60_000,
  );
});
