import { describe, expect, it } from 'vitest';
import { api, OTHER_TENANT, token } from '../support/stack.js';

const unique = () => Math.random().toString(36).slice(2, 10);

describe('GET /api/users/me', () => {
  it('records the caller on first use, from the token', async () => {
    const name = `Ada ${unique()}`;
    const caller = await token({ roles: ['LMS.Reader', 'LMS.Member'], username: `${name.replace(' ', '.')}@Contoso.test` });
    const response = await api('GET', '/users/me', { token: caller });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      email: `${name.replace(' ', '.')}@contoso.test`.toLowerCase(),
      roles: ['LMS.Reader', 'LMS.Member'],
    });
    expect(response.body.lastSeenAt).toBe(response.body.createdAt);
    expect(response.headers.get('etag')).toMatch(/^"/);
  });

  it('does not write on every request', async () => {
    const caller = await token({ roles: ['LMS.Reader'], username: `steady-${unique()}@contoso.test` });
    const first = await api('GET', '/users/me', { token: caller });
    for (let index = 0; index < 3; index++) await api('GET', '/projects?limit=1', { token: caller });
    const later = await api('GET', '/users/me', { token: caller });
    expect(later.body.lastSeenAt).toBe(first.body.lastSeenAt);
    expect(later.headers.get('etag')).toBe(first.headers.get('etag'));
  });

  it('answers 304 to If-None-Match naming the current version, as every read does', async () => {
    const caller = await token({ roles: ['LMS.Reader'], username: `cached-${unique()}@contoso.test` });
    const first = await api('GET', '/users/me', { token: caller });
    for (const ifNoneMatch of [first.headers.get('etag')!, '*']) {
      const again = await api('GET', '/users/me', { token: caller, headers: { 'if-none-match': ifNoneMatch } });
      expect(again.status, ifNoneMatch).toBe(304);
      expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
    }
    expect((await api('GET', '/users/me', { token: caller, headers: { 'if-none-match': '"other"' } })).status).toBe(200);
  });

  it('refreshes the record at once when the token shows new roles', async () => {
    const username = `promoted-${unique()}@contoso.test`;
    await api('GET', '/users/me', { token: await token({ roles: ['LMS.Reader'], username }) });
    const promoted = await api('GET', '/users/me', { token: await token({ roles: ['LMS.Manager'], username }) });
    expect(promoted.body.roles).toEqual(['LMS.Manager']);
  });

  it('is a 403 for an app-only token, which has no user', async () => {
    const response = await api('GET', '/users/me', { token: await token({ kind: 'app', roles: ['LMS.Reader'] }) });
    expect(response.status).toBe(403);
    expect(response.body.error).toBe('Forbidden');
  });
});

describe('GET /api/users', () => {
  it('lists the users who called the API, filtered by name or e-mail prefix and by role', async () => {
    const tag = unique();
    const reader = await token({ roles: ['LMS.Reader'], username: `zed.${tag}@contoso.test` });
    const manager = await token({ roles: ['LMS.Manager'], username: `yan.${tag}@contoso.test` });
    await api('GET', '/users/me', { token: reader });
    await api('GET', '/users/me', { token: manager });

    const byEmail = await api('GET', `/users?q=ZED.${tag}`, { token: reader });
    expect(byEmail.status).toBe(200);
    expect(byEmail.body.map((user: { email: string }) => user.email)).toEqual([`zed.${tag}@contoso.test`]);
    const byName = await api('GET', `/users?q=yan.${tag}`, { token: reader });
    expect(byName.body).toHaveLength(1);
    const managers = await api('GET', `/users?role=LMS.Manager&limit=200`, { token: reader });
    expect(managers.body.some((user: { email: string }) => user.email === `yan.${tag}@contoso.test`)).toBe(true);
    expect(managers.body.every((user: { roles: string[] }) => user.roles.includes('LMS.Manager'))).toBe(true);
  });

  it('pages through the users', async () => {
    const tag = unique();
    for (let index = 0; index < 3; index++)
      await api('GET', '/users/me', { token: await token({ roles: ['LMS.Reader'], username: `pager${index}.${tag}@contoso.test` }) });
    const caller = await token({ roles: ['LMS.Reader'] });
    const first = await api('GET', `/users?q=pager&limit=2`, { token: caller });
    expect(first.body).toHaveLength(2);
    expect(first.headers.get('link')).toContain('rel="next"');
  });

  it("never lists another tenant's users", async () => {
    const tag = unique();
    await api('GET', '/users/me', { token: await token({ roles: ['LMS.Reader'], username: `hidden.${tag}@contoso.test` }) });
    const other = await api('GET', `/users?q=hidden.${tag}`, { token: await token({ tenant: OTHER_TENANT, roles: ['LMS.Reader'] }) });
    expect(other.status).toBe(200);
    expect(other.body).toEqual([]);
  });

  it.each(['role=Admin', 'role=lms.reader', 'q=', `q=${'x'.repeat(201)}`, 'source=graph', 'limit=500', 'sort=name'])('refuses %s with 400', async (query) => {
    const response = await api('GET', `/users?${query}`, { token: await token({ roles: ['LMS.Reader'] }) });
    expect(response.status).toBe(400);
  });

  it('treats quotes and SQL in q as text', async () => {
    const response = await api('GET', `/users?q=${encodeURIComponent("x' OR 1=1 --")}`, { token: await token({ roles: ['LMS.Reader'] }) });
    expect(response.status).toBe(200);
    expect(response.body).toEqual([]);
  });
});
