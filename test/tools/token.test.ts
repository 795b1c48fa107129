/** The token command (`npm run token`): its arguments, the form it sends, and what it prints from a running identity provider. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CLIENT_ID, LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID } from '../../local/defaults.js';
import { startIdentityProvider, writeIdentityProviderInfo, type IdentityProvider } from '../../local/identity/provider.js';
import { CLOCK_SKEW_SECONDS } from '../../shared/auth/token-validator.js';
import { parseTokenArguments, runTokenCli, tokenRequestForm, UsageError } from '../../tools/token.js';

const UNKNOWN_TENANT_ID = '00000000-1111-4222-8333-444444444444';
const V1_ISSUER = `https://sts.windows.net/${LOCAL_HOME_TENANT_ID}/`;
const V1_AUDIENCE = `api://${LOCAL_CLIENT_ID}`;
// A Teams tab's App ID URI of the API, which the stack's AUTH_AUDIENCES names.
const TAB_APP_ID_URI = `api://tab.contoso.test/${LOCAL_CLIENT_ID}`;

/** The provider's signing key as its key set publishes it. */
const publicKeys = () => {
  const { kty, n, e, kid } = provider.privateJwk;
  return createLocalJWKSet({ keys: [{ kty, n, e, kid }] });
};

function capture(): { write(text: string): void; text: () => string } {
  let text = '';
  return { write: (chunk: string) => void (text += chunk), text: () => text };
}

let provider: IdentityProvider;

/** The request a command line makes, which must be a token request. */
function parseUser(args: string[]) {
  const parsed = parseTokenArguments(args);
  if (parsed.help) throw new Error('help asked for');
  return parsed.request;
}

describe('npm run token', () => {
  let dataDir: string;
  beforeAll(async () => {
    provider = await startIdentityProvider({ tenants: [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID], clientId: LOCAL_CLIENT_ID, appIdUris: [TAB_APP_ID_URI] });
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'token-cli-test-'));
    await writeIdentityProviderInfo(dataDir, {
      authorityHost: provider.authorityHost,
      tenants: [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID],
      clientId: LOCAL_CLIENT_ID,
      caCertPath: provider.caCertPath,
    });
  });
  afterAll(async () => {
    await provider.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('parses defaults into a v1 user token request for the home tenant', () => {
    expect(parseTokenArguments([])).toEqual({
      help: false,
      request: { tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', roles: [], username: 'dev@contoso.test', scope: 'access_as_user', version: 1 },
    });
  });

  it('parses repeated roles, the other tenant, --app, --v2 and --expires-in', () => {
    expect(parseTokenArguments(['--role', 'LMS.Admin', '--role', 'LMS.Reader', '--tenant', 'other', '--app', '--v2', '--expires-in', '90'])).toMatchObject({
      request: { tenantId: LOCAL_OTHER_TENANT_ID, kind: 'app', roles: ['LMS.Admin', 'LMS.Reader'], version: 2, expiresInSeconds: 90 },
    });
    expect(parseTokenArguments(['--help'])).toEqual({ help: true });
  });

  it.each([
    [['--unknown']],
    [['--tenant', 'contoso']],
    [['--app', '--user', 'x@contoso.test']],
    [['--expires-in', '-5']],
    [['--role', 'A,B']],
    [['--scope', `api://${LOCAL_CLIENT_ID}/access_as_user`]],
    [['--resource', 'https://graph.microsoft.com']],
    [['--resource', `${TAB_APP_ID_URI}/`]],
    [['positional']],
  ])('rejects %j as a usage error', (args) => {
    expect(() => parseTokenArguments(args)).toThrow(UsageError);
  });

  it('builds a password grant form for users and a client credentials form for apps', () => {
    const user = tokenRequestForm(
      { tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', roles: ['A', 'B'], username: 'u@contoso.test', name: 'U', scope: 'access_as_user', version: 2 },
      LOCAL_CLIENT_ID,
    );
    expect(Object.fromEntries(user)).toMatchObject({
      grant_type: 'password',
      username: 'u@contoso.test',
      scope: `api://${LOCAL_CLIENT_ID}/access_as_user`,
      roles: 'A B',
      name: 'U',
      token_version: '2',
    });
    const app = tokenRequestForm(
      { tenantId: LOCAL_HOME_TENANT_ID, kind: 'app', roles: [], username: 'ignored', scope: 'access_as_user', version: 1 },
      LOCAL_CLIENT_ID,
    );
    expect(Object.fromEntries(app)).toMatchObject({ grant_type: 'client_credentials', scope: `api://${LOCAL_CLIENT_ID}/.default` });
    expect(app.has('username')).toBe(false);
    expect(app.has('roles')).toBe(false);
  });

  it('prints only the access token from the running provider', async () => {
    const stdout = capture();
    const stderr = capture();
    const exitCode = await runTokenCli(['--role', 'LMS.Admin', '--name', 'Dev'], { dataDir, stdout, stderr });
    expect({ exitCode, stderr: stderr.text() }).toEqual({ exitCode: 0, stderr: '' });
    expect(stdout.text()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const { payload } = await jwtVerify(stdout.text().trim(), publicKeys(), { issuer: V1_ISSUER, audience: V1_AUDIENCE });
    expect(payload).toMatchObject({ roles: ['LMS.Admin'], upn: 'dev@contoso.test', name: 'Dev', scp: 'access_as_user' });
  });

  it('asks for another App ID URI of the API with --resource, which a v1 token has as its audience', async () => {
    expect(parseTokenArguments(['--resource', TAB_APP_ID_URI])).toMatchObject({ request: { resource: TAB_APP_ID_URI } });
    const form = (kind: 'user' | 'app') => Object.fromEntries(tokenRequestForm({ ...parseUser(['--resource', TAB_APP_ID_URI]), kind }, LOCAL_CLIENT_ID));
    expect(form('user')).toMatchObject({ scope: `${TAB_APP_ID_URI}/access_as_user` });
    expect(form('app')).toMatchObject({ scope: `${TAB_APP_ID_URI}/.default` });
    const stdout = capture();
    const stderr = capture();
    const exitCode = await runTokenCli(['--role', 'LMS.Reader', '--resource', TAB_APP_ID_URI], { dataDir, stdout, stderr });
    expect({ exitCode, stderr: stderr.text() }).toEqual({ exitCode: 0, stderr: '' });
    const { payload } = await jwtVerify(stdout.text().trim(), publicKeys(), { issuer: V1_ISSUER, audience: TAB_APP_ID_URI });
    expect(payload).toMatchObject({ scp: 'access_as_user', roles: ['LMS.Reader'] });
  });

  it("prints its help, which tells the API's allowance for clock skew, the one the validator applies", async () => {
    const stdout = capture();
    const exitCode = await runTokenCli(['--help'], { dataDir, stdout, stderr: capture() });
    expect(exitCode).toBe(0);
    expect(stdout.text()).toContain(`The API allows ${CLOCK_SKEW_SECONDS / 60} minutes of clock skew`);
  });

  it('reports the provider error on stderr with exit code 1', async () => {
    const stdout = capture();
    const stderr = capture();
    const exitCode = await runTokenCli(['--tenant', UNKNOWN_TENANT_ID], { dataDir, stdout, stderr });
    expect(exitCode).toBe(1);
    expect(stdout.text()).toBe('');
    expect(stderr.text()).toContain('AADSTS90002');
  });

  it('tells to run npm start when no provider is running, or to give the LOCAL_DATA_DIR of the one that runs', async () => {
    const stdout = capture();
    const stderr = capture();
    const exitCode = await runTokenCli([], { dataDir: path.join(dataDir, 'missing'), stdout, stderr });
    expect(exitCode).toBe(1);
    expect(stderr.text()).toContain('`npm start` first');
    // A stack started with a data folder of its own (a second stack) is found only through the same folder.
    expect(stderr.text()).toContain('the same LOCAL_DATA_DIR');
  });
});
