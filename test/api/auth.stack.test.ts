import { randomUUID } from 'node:crypto';
import { decodeJwt, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { sharedHostLog } from '../support/secrets-and-logs.js';
import { waitFor } from '../support/wait.js';
import { api, CLIENT_ID, HOME_TENANT, OTHER_TENANT, postForm, signToken, stack, token, uniqueEmail, userClaims, type ApiResponse } from '../support/stack.js';

const admin = () => token({ roles: ['LMS.Admin'] });
const now = () => Math.floor(Date.now() / 1000);
const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const JAPANESE = /[\u3040-\u30ff\u4e00-\u9fff]/;

async function createProject(owner = uniqueEmail()): Promise<{ id: string; name: string; owner: string }> {
  const response = await api('POST', '/projects', { token: await admin(), body: { name: `Auth ${owner}`, owner } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

function expectUnauthorized(response: ApiResponse): void {
  expect(response.status, JSON.stringify(response.body)).toBe(401);
  const challenge = response.headers.get('www-authenticate') ?? '';
  expect(challenge).toMatch(/^Bearer\b/);
  expect(challenge).toContain('error="invalid_token"');
  expect(response.body).toMatchObject({ error: 'Unauthorized', status: 401, message: expect.any(String) });
}

function expectForbidden(response: ApiResponse): void {
  expect(response.status, JSON.stringify(response.body)).toBe(403);
  expect(response.body).toMatchObject({ error: 'Forbidden', message: expect.stringMatching(/\S/), status: 403, requestId: expect.any(String) });
}

/** A token signed with the provider's real key, with the given claims of userClaims() changed. */
const crafted = (overrides: JWTPayload = {}, header: Record<string, unknown> = {}) => signToken(userClaims(overrides), header);

/** A valid crafted token without one claim (and the given ones changed; undefined removes one). */
function craftedWithout(claim: string, overrides: JWTPayload = {}): Promise<string> {
  const { [claim]: _removed, ...claims } = userClaims(overrides);
  return signToken(Object.fromEntries(Object.entries(claims).filter(([, value]) => value !== undefined)));
}

/** The ID token the identity provider gives the API's own client with a Graph token (On-Behalf-Of, scope openid). */
async function idTokenFromOnBehalfOf(): Promise<string> {
  const { status, body } = await postForm(`${stack.authorityHost}/${HOME_TENANT}/oauth2/v2.0/token`, {
    grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
    client_id: CLIENT_ID,
    client_secret: 'local',
    assertion: await token({ roles: ['LMS.Admin'] }),
    requested_token_use: 'on_behalf_of',
    scope: 'https://graph.microsoft.com/User.Read openid profile',
  });
  expect(status, JSON.stringify(body)).toBe(200);
  return body.id_token as string;
}

const listProjects = (bearer: string) => api('GET', '/projects?limit=1', { token: bearer });

describe('roles against project operations', () => {
  type Operation = 'list' | 'get' | 'create' | 'update' | 'delete';
  const ROLES = ['LMS.Reader', 'LMS.Member', 'LMS.Manager', 'LMS.Admin'] as const;
  // The contract's role table, for projects.
  const ALLOWED: Record<Operation, readonly string[]> = {
    list: ROLES,
    get: ROLES,
    create: ['LMS.Manager', 'LMS.Admin'],
    update: ['LMS.Manager', 'LMS.Admin'],
    delete: ['LMS.Admin'],
  };
  const SUCCESS: Record<Operation, number> = { list: 200, get: 200, create: 201, update: 200, delete: 204 };

  let shared: { id: string };
  beforeAll(async () => {
    shared = await createProject();
  });

  async function perform(operation: Operation, bearer: string): Promise<{ response: ApiResponse; projectId?: string }> {
    switch (operation) {
      case 'list':
        return { response: await api('GET', '/projects', { token: bearer }) };
      case 'get':
        return { response: await api('GET', `/projects/${shared.id}`, { token: bearer }) };
      case 'create':
        return { response: await api('POST', '/projects', { token: bearer, body: { name: 'Role check', owner: uniqueEmail() } }) };
      case 'update':
        return { response: await api('PUT', `/projects/${shared.id}`, { token: bearer, body: { description: `Updated at ${Date.now()}` } }) };
      case 'delete': {
        // A project of its own, so that a successful delete leaves the others in place.
        const { id } = await createProject();
        return { response: await api('DELETE', `/projects/${id}`, { token: bearer }), projectId: id };
      }
    }
  }

  const callers = [...ROLES.map((role) => ({ label: role, roles: [role] as string[] })), { label: 'a user with no role', roles: [] as string[] }];
  for (const caller of callers) {
    for (const operation of Object.keys(ALLOWED) as Operation[]) {
      const allowed = caller.roles.some((role) => ALLOWED[operation].includes(role));
      it(`${caller.label} ${allowed ? 'may' : 'may not'} ${operation} projects (${allowed ? SUCCESS[operation] : 403})`, async () => {
        const { response, projectId } = await perform(operation, await token({ roles: caller.roles }));
        if (allowed) {
          expect(response.status, JSON.stringify(response.body)).toBe(SUCCESS[operation]);
        } else {
          expectForbidden(response);
          // A refused delete deletes nothing.
          if (projectId) expect((await api('GET', `/projects/${projectId}`, { token: await admin() })).status).toBe(200);
        }
      });
    }
  }
});

describe('app-only tokens', () => {
  it('are authorised by their roles alone: LMS.Reader may list', async () => {
    const response = await listProjects(await token({ kind: 'app', roles: ['LMS.Reader'] }));
    expect(response.status).toBe(200);
    expect(Array.isArray(response.body)).toBe(true);
  });

  it('are authorised by their roles alone: LMS.Reader may not create (403)', async () => {
    const response = await api('POST', '/projects', {
      token: await token({ kind: 'app', roles: ['LMS.Reader'] }),
      body: { name: 'Daemon', owner: uniqueEmail() },
    });
    expectForbidden(response);
  });

  it('are authorised by their roles alone: LMS.Admin may create with an explicit owner', async () => {
    const owner = uniqueEmail();
    const appToken = await token({ kind: 'app', roles: ['LMS.Admin'] });
    const response = await api('POST', '/projects', { token: appToken, body: { name: 'From a daemon', owner } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body).toMatchObject({ owner, createdBy: decodeJwt(appToken).oid });
  });

  it('without any role are refused (403)', async () => {
    expectForbidden(await listProjects(await token({ kind: 'app', roles: [] })));
  });
});

describe('v2 tokens', () => {
  it('are accepted with the bare client id as audience and the v2 issuer', async () => {
    const v2 = await token({ version: 2, roles: ['LMS.Manager'] });
    expect(decodeJwt(v2)).toMatchObject({ ver: '2.0', aud: CLIENT_ID, iss: `${stack.authorityHost}/${HOME_TENANT}/v2.0` });
    expect((await listProjects(v2)).status).toBe(200);
    const created = await api('POST', '/projects', { token: v2, body: { name: 'From a v2 token', owner: uniqueEmail() } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  });

  it('are accepted for app-only callers too', async () => {
    const v2App = await token({ kind: 'app', version: 2, roles: ['LMS.Reader'] });
    expect(decodeJwt(v2App)).toMatchObject({ ver: '2.0', aud: CLIENT_ID, idtyp: 'app' });
    expect((await listProjects(v2App)).status).toBe(200);
  });
});

describe('the Authorization header', () => {
  const withHeader = (authorization: string) => api('GET', '/projects?limit=1', { headers: { authorization } });

  it('takes the Bearer scheme in any case, with one or more spaces before the token', async () => {
    const valid = await admin();
    for (const authorization of [`bearer ${valid}`, `BEARER ${valid}`, `Bearer    ${valid}`]) {
      const response = await withHeader(authorization);
      expect(response.status, authorization.slice(0, 12)).toBe(200);
    }
  });

  it('refuses a token that is not set off by spaces, is empty, or has anything after it', async () => {
    const valid = await admin();
    for (const authorization of [
      `Bearer${valid}`,
      `Bearer\t${valid}`,
      'Bearer',
      `Bearer ${valid} ${valid}`,
      `Bearer ${valid}\tx`,
      `Bearers ${valid}`,
      `Token ${valid}`,
    ]) {
      expectUnauthorized(await withHeader(authorization));
    }
  });
});

describe('401 Unauthorized with a Bearer invalid_token challenge', () => {
  it('for a request without an Authorization header', async () => {
    expectUnauthorized(await api('GET', '/projects'));
  });

  it('for the Basic scheme', async () => {
    expectUnauthorized(await api('GET', '/projects', { headers: { authorization: `Basic ${Buffer.from('user:password').toString('base64')}` } }));
  });

  it('for a Bearer token that is garbage', async () => {
    for (const garbage of ['garbage', 'a.b.c', 'eyJhbGciOiJSUzI1NiJ9.e30.c2ln', '....']) {
      expectUnauthorized(await api('GET', '/projects', { headers: { authorization: `Bearer ${garbage}` } }));
    }
  });

  it('for a token in the access_token query parameter, with or without a valid header', async () => {
    const valid = await admin();
    expectUnauthorized(await api('GET', `/projects?access_token=${valid}`));
    expectUnauthorized(await api('GET', `/projects?access_token=${valid}`, { token: valid }));
  });

  const badTokens: Array<[string, () => Promise<string>]> = [
    ['expired beyond the 5-minute clock skew', () => crafted({ iat: now() - 4000, nbf: now() - 4000, exp: now() - 600 })],
    ['not valid until beyond the 5-minute clock skew (nbf in the future)', () => crafted({ nbf: now() + 600, exp: now() + 4000 })],
    ['without exp', () => craftedWithout('exp')],
    ['without oid', () => craftedWithout('oid')],
    ['issued for Microsoft Graph', () => crafted({ aud: 'https://graph.microsoft.com' })],
    ['issued for another app', () => crafted({ aud: 'api://some-other-app' })],
    ['issued by a tenant that is not allowed', () => crafted({ iss: `https://sts.windows.net/${randomUUID()}/` })],
    [
      'of a tenant (tid) that is not allowed',
      () => {
        const tenant = randomUUID();
        return crafted({ tid: tenant, iss: `https://sts.windows.net/${tenant}/` });
      },
    ],
    ['whose tid does not match its issuer', () => crafted({ tid: OTHER_TENANT })],
    ['of version 2.0 with a v1 issuer', () => crafted({ ver: '2.0', aud: CLIENT_ID })],
    ['with alg none and no signature', async () => `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url(userClaims())}.`],
    [
      'signed with HS256',
      () =>
        new SignJWT(userClaims())
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: stack.signingKid })
          .sign(new TextEncoder().encode('a-shared-secret-of-32-bytes-long!')),
    ],
    [
      "signed by another RSA key under the provider's kid",
      async () => {
        const { privateKey } = await generateKeyPair('RS256');
        return new SignJWT(userClaims()).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: stack.signingKid }).sign(privateKey);
      },
    ],
    ['with an unknown kid', () => crafted({}, { kid: 'no-such-key' })],
    // The provider's key set holds one key, which jose would use for a token naming none; Entra always names it.
    ["without a kid, signed by the provider's only key", () => crafted({}, { kid: undefined })],
    // An ID token of a client app signing in with the API's client id (an add-in): same keys, issuer and audience,
    // the user's app roles, no scope, and no client app named (appid, or azp in v2), which every access token names.
    ["that is a v1 ID token carrying the user's roles", () => craftedWithout('appid', { scp: undefined, aud: CLIENT_ID })],
    [
      "that is a v2 ID token carrying the user's roles",
      () => crafted({ ver: '2.0', aud: CLIENT_ID, iss: `${stack.authorityHost}/${HOME_TENANT}/v2.0`, appid: undefined, scp: undefined }),
    ],
    ["that is the identity provider's own ID token, from On-Behalf-Of with openid", () => idTokenFromOnBehalfOf()],
  ];

  it.each(badTokens)('for a token %s', async (_, makeToken) => {
    expectUnauthorized(await listProjects(await makeToken()));
  });

  it('for an ID token, saying so: a client that sent its ID token is told to send an access token for the API', async () => {
    const response = await listProjects(await idTokenFromOnBehalfOf());
    expectUnauthorized(response);
    expect(response.body.message).toBe('This is an ID token, which signs a user in to an app; send an access token for this API.');
    expect(response.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", error_description="${response.body.message}"`);
  });

  it.each([
    ['expired', () => crafted({ iat: now() - 4000, nbf: now() - 4000, exp: now() - 600 }), 'The access token has expired: get a new one.'],
    [
      'not valid yet',
      () => crafted({ nbf: now() + 600, exp: now() + 4000 }),
      "The access token is not valid yet: its nbf or iat is more than 5 minutes ahead of this service's clock.",
    ],
    [
      'for another resource',
      () => crafted({ aud: 'https://graph.microsoft.com' }),
      "The access token was issued for another resource: its audience (aud) is not this API's App ID URI or client id.",
    ],
    [
      'with the issuer of another version',
      () => crafted({ ver: '2.0', aud: CLIENT_ID }),
      'The issuer (iss) of the access token is not the one this API accepts for its tenant (tid) and version (ver).',
    ],
  ])('for a genuine token %s, saying why in its message and in the challenge (RFC 6750 error_description)', async (_, makeToken, reason) => {
    const response = await listProjects(await makeToken());
    expectUnauthorized(response);
    expect(response.body.message).toBe(reason);
    expect(response.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", error_description="${reason}"`);
    // In Japanese too; the header stays English, as RFC 6750 keeps it ASCII.
    const japanese = await api('GET', '/projects?limit=1', { token: await makeToken(), headers: { 'accept-language': 'ja' } });
    expect(japanese.body.message).toMatch(JAPANESE);
    expect(japanese.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", error_description="${reason}"`);
  });

  it("for a genuine token for another resource, leaving the reason in the host's log by request id, never the token", async () => {
    const refused = await crafted({ aud: 'https://graph.microsoft.com' });
    const response = await listProjects(refused);
    expectUnauthorized(response);
    const requestId = response.headers.get('x-request-id')!;
    // Beside the request's line (its status), a line of the function's saying why.
    const line = await waitFor(async () =>
      (await sharedHostLog()).split('\n').find((logged) => logged.includes(requestId) && logged.includes('tokenWrongAudience')),
    );
    expect(line).toContain(`projects-list: Refused with 401 tokenWrongAudience (request ${requestId}): ${response.body.message}`);
    const log = await sharedHostLog();
    expect(log).not.toContain(refused);
    expect(log).not.toContain(refused.split('.')[1]);
  });

  it('for a forged token, without a reason: its claims are not read before its signature is good', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT(userClaims({ exp: now() - 600 })).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: stack.signingKid }).sign(privateKey);
    const response = await listProjects(forged);
    expectUnauthorized(response);
    expect(response.body.message).toBe('The access token is missing, malformed, expired or not issued for this API.');
    expect(response.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  // Padding a claim with 12 KiB gives a token of about 16.5 KiB, just over the validator's 16 KiB limit.
  it('for a token over 16 KB (answered by the API, not refused by the host with a bare 431)', async () => {
    const oversized = await crafted({ padding: 'x'.repeat(12 * 1024) });
    expect(oversized.length).toBeGreaterThan(16 * 1024);
    expectUnauthorized(await listProjects(oversized));
  });
});

describe('accepted tokens', () => {
  it('a crafted token left unchanged is accepted, so each 401 above comes from its one change', async () => {
    expect((await listProjects(await crafted())).status).toBe(200);
  });

  it('a large token still under 16 KB is accepted', async () => {
    const large = await crafted({ padding: 'x'.repeat(11 * 1024) });
    expect(large.length).toBeLessThan(16 * 1024);
    expect((await listProjects(large)).status).toBe(200);
  });

  it('a token expired within the 5-minute clock skew (2 minutes ago) is still accepted', async () => {
    const response = await listProjects(await crafted({ iat: now() - 3720, nbf: now() - 3720, exp: now() - 120 }));
    expect(response.status, JSON.stringify(response.body)).toBe(200);
  });
});

describe('tenancy', () => {
  let project: { id: string; name: string; owner: string };
  let other: string;
  beforeAll(async () => {
    project = await createProject();
    other = await token({ tenant: OTHER_TENANT, roles: ['LMS.Admin'] });
  });

  it("another tenant's token gets 404 for a project of the home tenant on GET, PUT and DELETE", async () => {
    const path = `/projects/${project.id}`;
    for (const response of [
      await api('GET', path, { token: other }),
      await api('PUT', path, { token: other, body: { name: 'Hijacked' } }),
      await api('DELETE', path, { token: other }),
    ]) {
      expect(response.status).toBe(404);
      expect(response.body).toMatchObject({ error: 'Not Found', status: 404 });
    }
    const unchanged = await api('GET', path, { token: await admin() });
    expect(unchanged.status).toBe(200);
    expect(unchanged.body).toMatchObject({ name: project.name, owner: project.owner });
  });

  it("another tenant's list does not contain the home tenant's project", async () => {
    const byOwner = await api('GET', `/projects?owner=${encodeURIComponent(project.owner)}`, { token: other });
    expect(byOwner.status).toBe(200);
    expect(byOwner.body).toEqual([]);
    const all = await api('GET', '/projects?limit=200', { token: other });
    expect(all.status).toBe(200);
    expect(all.body.filter((item: { owner: string }) => item.owner === project.owner)).toEqual([]);
  });
});

describe('a user token without the scope access_as_user', () => {
  it.each([['access_as_user_x'], ['User.Read'], ['Access_As_User']])('(scp %j) is a 403 naming the scope to ask for', async (scp) => {
    const response = await listProjects(await crafted({ scp }));
    expectForbidden(response);
    expect(response.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="api://${CLIENT_ID}/access_as_user"`);
  });
});

describe('role values are matched exactly', () => {
  it.each([['lms.admin'], ['LMS.ADMIN'], ['LMS.Admin '], ['Admin']])('a token whose only role is %j is granted nothing (403)', async (role) => {
    const bearer = await crafted({ roles: [role] });
    expectForbidden(await listProjects(bearer));
    expectForbidden(await api('POST', '/projects', { token: bearer, body: { name: 'Case', owner: uniqueEmail() } }));
  });
});

describe('error messages in Japanese', () => {
  async function inBothLanguages(call: (headers: Record<string, string>) => Promise<ApiResponse<{ message: string }>>) {
    const [english, japanese] = [await call({ 'accept-language': 'en' }), await call({ 'accept-language': 'ja' })];
    expect(japanese.status).toBe(english.status);
    expect(english.body.message).not.toMatch(JAPANESE);
    expect(japanese.body.message).toMatch(JAPANESE);
    expect(japanese.body.message).not.toBe(english.body.message);
    return japanese;
  }

  it('a 401 message is in Japanese when Accept-Language prefers ja', async () => {
    expectUnauthorized(await inBothLanguages((headers) => api('GET', '/projects', { headers })));
  });

  it('a 403 message is in Japanese when Accept-Language prefers ja', async () => {
    const noRole = await token({ roles: [] });
    expectForbidden(await inBothLanguages((headers) => api('GET', '/projects', { token: noRole, headers })));
  });
});
