/**
 * authenticate() and authorize() with HttpRequests built by @azure/functions' own constructor, and
 * tokens of the local identity provider (the stand-in the stack uses, over HTTPS), started by this file.
 */
import functions from '@azure/functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../../local/identity/provider.js';
import { authenticate, authorize } from '../../../shared/auth/authenticate.js';
import type { Principal } from '../../../shared/auth/principal.js';

const { HttpRequest } = functions;
const TENANT = '6f1c2a4e-3b5d-4c7e-9a10-1b2c3d4e5f60';
const CLIENT_ID = 'c0ffee00-0000-4000-8000-000000000001';

let provider: IdentityProvider;
let userToken: string;

beforeAll(async () => {
  provider = await startIdentityProvider({ tenants: [TENANT], clientId: CLIENT_ID, tls: inject('trustedTls') });
  // Read on the first request: the app's settings, pointing at this file's identity provider.
  Object.assign(process.env, { AUTH_TENANT_ID: TENANT, AUTH_CLIENT_ID: CLIENT_ID, AUTH_AUTHORITY_HOST: provider.authorityHost });
  userToken = await provider.issueToken({ tenantId: TENANT, kind: 'user', roles: ['LMS.Member'] });
});
afterAll(() => provider.close());

const request = (headers: Record<string, string> = {}, query = '') => new HttpRequest({ method: 'GET', url: `http://localhost/api/projects${query}`, headers });
const refused = (messageKey: string) =>
  expect.objectContaining({ status: 401, messageKey, options: { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } } });

describe('authenticate', () => {
  it('reads the bearer token, the scheme in any case, with spaces around the token', async () => {
    for (const header of [`Bearer ${userToken}`, `bearer ${userToken}`, `BEARER   ${userToken}`, `Bearer ${userToken}   `, `Bearer   ${userToken} \t `]) {
      await expect(authenticate(request({ authorization: header }))).resolves.toMatchObject({ tenantId: TENANT, kind: 'user', accessToken: userToken });
    }
  });

  it('validates the token with one validator per process, which fetches the metadata once', async () => {
    await authenticate(request({ authorization: `Bearer ${userToken}` }));
    const before = { ...provider.counts };
    for (let index = 0; index < 3; index++) await authenticate(request({ authorization: `Bearer ${userToken}` }));
    expect(provider.counts).toEqual(before);
  });

  it('refuses a missing token as missing, and other credentials as invalid', async () => {
    await expect(authenticate(request())).rejects.toEqual(refused('tokenMissing'));
    for (const header of [
      `Basic ${Buffer.from('a:b').toString('base64')}`,
      `Basic  ${userToken}`,
      `Token  ${userToken}`,
      'Bearer',
      'Bearer ',
      'Bearer    ',
      `Bearer${userToken}`,
      `Bearer\t${userToken}`,
      `Bearerx ${userToken}`,
      `xBearer ${userToken}`,
      `Token ${userToken}`,
      `Bearer ${userToken}x`,
    ]) {
      await expect(authenticate(request({ authorization: header })), header.slice(0, 12)).rejects.toEqual(refused('tokenInvalid'));
    }
  });

  it('refuses a token in the query string, even next to a valid header', async () => {
    await expect(authenticate(request({ authorization: `Bearer ${userToken}` }, `?access_token=${userToken}`))).rejects.toEqual(refused('tokenInQuery'));
    await expect(authenticate(request({}, '?access_token='))).rejects.toEqual(refused('tokenInQuery'));
    await expect(authenticate(request({ authorization: `Bearer ${userToken}` }, '?token=x'))).resolves.toMatchObject({ kind: 'user' });
  });
});

describe('authorize', () => {
  const principal = (roles: Principal['roles']): Principal => ({
    tenantId: TENANT,
    objectId: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
    kind: 'user',
    roles,
    email: undefined,
    displayName: undefined,
    accessToken: 'x',
  });

  it('lets a role do what the role table allows, and answers anything else with a 403 naming the permission', () => {
    expect(() => authorize(principal(['LMS.Member']), 'tasks:write')).not.toThrow();
    expect(() => authorize(principal(['LMS.Reader', 'LMS.Admin']), 'webhooks:manage')).not.toThrow();
    expect(() => authorize(principal(['LMS.Member']), 'projects:write')).toThrow(
      expect.objectContaining({ status: 403, messageKey: 'forbidden', params: { permission: 'projects:write' } }),
    );
    expect(() => authorize(principal([]), 'projects:read')).toThrow(expect.objectContaining({ status: 403 }));
  });
});
