import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../local/identity-provider.js';
import { readAuthSettings } from '../../shared/settings/read.js';
import { createTokenValidator } from '../../shared/auth/token-validator.js';
import { ApiError, DependencyUnavailableError } from '../../shared/errors.js';
import { CLIENT_ID, HOME_TENANT, stack } from '../support/stack.js';

// These run the real jose code against a provider of their own, to see what the validator asks it.
describe('token validator', () => {
  let dataDir: string;
  let provider: IdentityProvider;
  const start = (port = 0) => startIdentityProvider({ port, tenants: [HOME_TENANT], clientId: CLIENT_ID, tls: stack.tls, dataDir });
  const validatorFor = (environment: Record<string, string> = {}) =>
    createTokenValidator(
      readAuthSettings({ AUTH_TENANT_ID: HOME_TENANT, AUTH_CLIENT_ID: CLIENT_ID, AUTH_AUTHORITY_HOST: provider.authorityHost, ...environment }),
    );

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'validator-test-'));
    provider = await start();
  });
  afterAll(async () => {
    await provider.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('reads a verified user token into a principal', async () => {
    const token = await provider.issueToken({
      tenantId: HOME_TENANT,
      kind: 'user',
      roles: ['LMS.Member', 'Unknown.Role'],
      username: 'Kim@Contoso.test',
      name: 'Kim',
    });
    const principal = await validatorFor().validate(token);
    expect(principal).toMatchObject({ tenantId: HOME_TENANT, kind: 'user', roles: ['LMS.Member'], email: 'kim@contoso.test', displayName: 'Kim' });
  });

  it('gives a user token without roles the configured default role, but never an app token', async () => {
    const validator = validatorFor({ AUTH_DEFAULT_ROLE: 'LMS.Reader' });
    const user = await provider.issueToken({ tenantId: HOME_TENANT, kind: 'user' });
    const app = await provider.issueToken({ tenantId: HOME_TENANT, kind: 'app' });
    expect((await validator.validate(user)).roles).toEqual(['LMS.Reader']);
    expect((await validator.validate(app)).roles).toEqual([]);
    expect((await validatorFor().validate(user)).roles).toEqual([]);
  });

  it('accepts an extra configured audience such as a Teams SSO App ID URI', async () => {
    const audience = `api://teams.contoso.test/${CLIENT_ID}`;
    const token = await provider.issueToken({ tenantId: HOME_TENANT, kind: 'user', audience, roles: ['LMS.Reader'] });
    await expect(validatorFor().validate(token)).rejects.toMatchObject({ status: 401 });
    await expect(validatorFor({ AUTH_AUDIENCES: audience }).validate(token)).resolves.toMatchObject({ kind: 'user' });
  });

  it('fetches metadata and keys once, and refetches keys for an unknown kid at most once per cooldown', async () => {
    const validator = validatorFor();
    const before = { ...provider.counts };
    const token = await provider.issueToken({ tenantId: HOME_TENANT, kind: 'user' });
    for (let index = 0; index < 5; index++) await validator.validate(token);
    expect(provider.counts.metadata - before.metadata).toBe(2);
    expect(provider.counts.jwks - before.jwks).toBe(1);

    const [header, payload, signature] = token.split('.');
    const unknownKid = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(header!, 'base64url').toString()), kid: 'unknown-kid' })).toString('base64url');
    for (let index = 0; index < 5; index++) {
      await expect(validator.validate(`${unknownKid}.${payload}.${signature}`)).rejects.toBeInstanceOf(ApiError);
    }
    // The keys were fetched moments ago, within jose's cooldown: five unknown kids cause no refetch storm.
    expect(provider.counts.jwks - before.jwks).toBeLessThanOrEqual(2);
  });

  it('reports an unreachable identity provider as a dependency failure, and recovers when it is back', async () => {
    const token = await provider.issueToken({ tenantId: HOME_TENANT, kind: 'user' });
    const validator = validatorFor();
    const { port } = provider;
    await provider.close();
    try {
      await expect(validator.validate(token)).rejects.toBeInstanceOf(DependencyUnavailableError);
    } finally {
      provider = await start(port);
    }
    await expect(validator.validate(token)).resolves.toMatchObject({ tenantId: HOME_TENANT });
  });
});
