import { describe, expect, it } from 'vitest';
import { api, eventsAbout, OTHER_TENANT, stack, token, uniqueEmail, type ApiResponse } from '../support/stack.js';

const admin = () => token({ roles: ['LMS.Admin'] });

async function createProject(body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const response = await api('POST', '/projects', { token: await admin(), body: { name: 'Onboarding', owner: uniqueEmail(), ...body }, headers });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response;
}

describe('POST /api/projects', () => {
  it('creates an Active project with a PRJ id, Location and ETag', async () => {
    const owner = uniqueEmail();
    const response = await createProject({
      name: '  新しいプロジェクト 🚀  ',
      description: 'Line one\nLine two',
      owner,
      members: ['B@Contoso.test', 'b@contoso.test'],
    });
    const project = response.body;
    expect(project).toMatchObject({
      name: '新しいプロジェクト 🚀',
      description: 'Line one\nLine two',
      status: 'Active',
      owner,
      members: [owner, 'b@contoso.test'],
    });
    expect(project.id).toMatch(/^PRJ-\d+$/);
    expect(Number(project.id.slice(4))).toBeGreaterThanOrEqual(1001);
    expect(project.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(project.updatedAt).toBe(project.createdAt);
    expect(project.createdBy).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers.get('location')).toBe(`/api/projects/${project.id}`);
    expect(response.headers.get('etag')).toMatch(/^"[^"]+"$/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('refuses a status in the create body: a new project is always Active', async () => {
    const response = await api('POST', '/projects', { token: await admin(), body: { name: 'X', status: 'Planning' } });
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([{ path: 'status', message: expect.stringContaining('status') }]);
  });

  it("defaults the owner to the caller's e-mail claim", async () => {
    const callerToken = await token({ roles: ['LMS.Manager'], username: 'Manager.One@Contoso.test' });
    const response = await api('POST', '/projects', { token: callerToken, body: { name: 'Mine' } });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ owner: 'manager.one@contoso.test', members: ['manager.one@contoso.test'], description: '' });
  });

  it('requires an owner when an app-only token carries no e-mail', async () => {
    const appToken = await token({ kind: 'app', roles: ['LMS.Admin'] });
    const response = await api('POST', '/projects', { token: appToken, body: { name: 'From a daemon' } });
    expect(response.status).toBe(400);
    expect(response.body.message).toContain('owner');
  });

  it('validates every field and lists each problem', async () => {
    const response = await api('POST', '/projects', {
      token: await admin(),
      body: { name: '   ', description: 5, owner: 'not-an-email', members: ['ok@contoso.test', 'nope'], extra: true },
    });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: 'Bad Request', status: 400 });
    expect(response.body.details.map((detail: { path: string }) => detail.path).sort()).toEqual(['description', 'extra', 'members.1', 'name', 'owner']);
  });

  it('counts characters, not UTF-16 units, against the 200 limit', async () => {
    expect((await api('POST', '/projects', { token: await admin(), body: { name: '😀'.repeat(200), owner: uniqueEmail() } })).status).toBe(201);
    expect((await api('POST', '/projects', { token: await admin(), body: { name: '😀'.repeat(201), owner: uniqueEmail() } })).status).toBe(400);
  });

  it('replays an Idempotency-Key: same id, same status, nothing new created', async () => {
    const owner = uniqueEmail();
    const key = `key-${owner}`;
    const body = { name: 'Once only', owner };
    const first = await createProject(body, { 'Idempotency-Key': key });
    const second = await api('POST', '/projects', { token: await admin(), body, headers: { 'Idempotency-Key': key } });
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const listed = await api('GET', `/projects?owner=${encodeURIComponent(owner)}`, { token: await admin() });
    expect(listed.body).toHaveLength(1);
  });

  it('refuses an Idempotency-Key reused with a different body', async () => {
    const key = `key-${uniqueEmail()}`;
    await createProject({ name: 'A' }, { 'Idempotency-Key': key });
    const reused = await api('POST', '/projects', { token: await admin(), body: { name: 'B' }, headers: { 'Idempotency-Key': key } });
    expect(reused.status).toBe(422);
    expect(reused.body.error).toBe('Unprocessable Content');
  });

  it('gives concurrent creates with one Idempotency-Key a single project', async () => {
    const owner = uniqueEmail();
    const body = { name: 'Raced', owner };
    const responses = await Promise.all(
      Array.from({ length: 10 }, async () => api('POST', '/projects', { token: await admin(), body, headers: { 'Idempotency-Key': `race-${owner}` } })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(10).fill(201));
    expect(new Set(responses.map((response) => response.body.id)).size).toBe(1);
    const listed = await api('GET', `/projects?owner=${encodeURIComponent(owner)}`, { token: await admin() });
    expect(listed.body).toHaveLength(1);
  });

  it('gives 100 concurrent creates 100 distinct ids', async () => {
    const owner = uniqueEmail();
    const adminToken = await admin();
    const responses = await Promise.all(
      Array.from({ length: 100 }, (_, index) => api('POST', '/projects', { token: adminToken, body: { name: `Parallel ${index}`, owner } })),
    );
    expect(responses.every((response) => response.status === 201)).toBe(true);
    expect(new Set(responses.map((response) => response.body.id)).size).toBe(100);
  });
});

describe('GET /api/projects', () => {
  it('pages through more projects than one page with cursor and Link', async () => {
    const owner = uniqueEmail();
    const adminToken = await admin();
    const created = [];
    for (let index = 0; index < 7; index++) created.push((await createProject({ name: `Paged ${index}`, owner })).body.id);
    const seen: string[] = [];
    let next: string | undefined = `/projects?owner=${encodeURIComponent(owner)}&limit=3`;
    let pages = 0;
    while (next) {
      const page: ApiResponse<{ id: string }[]> = await api('GET', next, { token: adminToken });
      expect(page.status).toBe(200);
      expect(Array.isArray(page.body)).toBe(true);
      seen.push(...page.body.map((project: { id: string }) => project.id));
      pages++;
      const link: string | null = page.headers.get('link');
      // Resolved against the URL asked, as RFC 8288 has it: the link is a path on the API's own host.
      next = link ? new URL(/^<(\/api\/[^>]+)>; rel="next"$/.exec(link)![1]!, `${stack.apiBaseUrl}${next}`).href.slice(stack.apiBaseUrl.length) : undefined;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual([...created].reverse());
  });

  it('filters by status, member and name, and sorts by name', async () => {
    const owner = uniqueEmail();
    const adminToken = await admin();
    const alpha = (await createProject({ name: 'alpha Launch', owner, members: ['crew@contoso.test'] })).body;
    const beta = (await createProject({ name: 'Beta launch', owner })).body;
    await createProject({ name: 'Gamma', owner });
    await api('PUT', `/projects/${beta.id}`, { token: adminToken, body: { status: 'OnHold' } });
    const q = encodeURIComponent(owner);
    const byName = await api('GET', `/projects?owner=${q}&q=LAUNCH&sort=name`, { token: adminToken });
    expect(byName.body.map((project: { name: string }) => project.name)).toEqual(['alpha Launch', 'Beta launch']);
    const byNameDesc = await api('GET', `/projects?owner=${q}&sort=-name`, { token: adminToken });
    expect(byNameDesc.body.map((project: { name: string }) => project.name)).toEqual(['Gamma', 'Beta launch', 'alpha Launch']);
    const onHold = await api('GET', `/projects?owner=${q}&status=OnHold`, { token: adminToken });
    expect(onHold.body.map((project: { id: string }) => project.id)).toEqual([beta.id]);
    const crew = await api('GET', `/projects?owner=${q}&member=CREW@contoso.test`, { token: adminToken });
    expect(crew.body.map((project: { id: string }) => project.id)).toEqual([alpha.id]);
  });

  it('refuses bad limits, sorts, unknown and repeated parameters', async () => {
    const adminToken = await admin();
    for (const query of [
      'limit=0',
      'limit=201',
      'limit=-1',
      'limit=abc',
      'limit=1e9',
      'sort=owner',
      'status=Done',
      'colour=red',
      'limit=5&limit=6',
      'owner=%27%20OR%201%3D1%20--',
    ]) {
      const response = await api('GET', `/projects?${query}`, { token: adminToken });
      expect(response.status, query).toBe(400);
      expect(response.body).toMatchObject({ error: 'Bad Request', status: 400 });
    }
  });

  it("refuses a repeated parameter by name, though Azure's host joins its values into one, and a comma list in a filter that takes one value", async () => {
    const adminToken = await admin();
    for (const [query, name] of [
      ['q=a&q=b', 'q'],
      ['status=Active&STATUS=OnHold', 'STATUS'],
      ['q=&q=launch', 'q'],
    ]) {
      const response = await api('GET', `/projects?${query}`, { token: adminToken });
      expect(response.status, query).toBe(400);
      expect(response.body.message, query).toBe(`The query parameter "${name}" may appear only once.`);
    }
    const list = await api('GET', '/projects?status=Active,OnHold', { token: adminToken, headers: { 'accept-language': 'ja' } });
    expect(list.status).toBe(400);
    expect(list.body.details).toEqual([{ path: 'query.status', message: '「status」には値を 1 つだけ指定できます。カンマ区切りのリストは指定できません。' }]);
    // In a search a comma is text.
    expect((await api('GET', `/projects?q=${encodeURIComponent('launch, beta')}`, { token: adminToken })).status).toBe(200);
  });

  it('treats quotes and SQL in q as plain text', async () => {
    // Within one owner's projects: other test files may name a project after this very text.
    const owner = uniqueEmail();
    await createProject({ owner });
    const response = await api('GET', `/projects?owner=${encodeURIComponent(owner)}&q=${encodeURIComponent("' OR 1=1 --")}`, { token: await admin() });
    expect(response.status).toBe(200);
    expect(response.body).toEqual([]);
  });

  it('refuses a tampered cursor and a cursor from another query', async () => {
    const owner = uniqueEmail();
    const adminToken = await admin();
    for (let index = 0; index < 3; index++) await createProject({ owner });
    const first = await api('GET', `/projects?owner=${encodeURIComponent(owner)}&limit=1`, { token: adminToken });
    const cursor = new URL(/^<([^>]+)>/.exec(first.headers.get('link')!)![1]!, stack.apiBaseUrl).searchParams.get('cursor')!;
    const otherQuery = await api('GET', `/projects?limit=1&cursor=${cursor}`, { token: adminToken });
    expect(otherQuery.status).toBe(400);
    const garbage = await api('GET', `/projects?owner=${encodeURIComponent(owner)}&cursor=bm90LWEtY3Vyc29y`, { token: adminToken });
    expect(garbage.status).toBe(400);
    const otherTenant = await api('GET', `/projects?owner=${encodeURIComponent(owner)}&limit=1&cursor=${cursor}`, {
      token: await token({ tenant: OTHER_TENANT, roles: ['LMS.Admin'] }),
    });
    expect(otherTenant.status).toBe(400);
  });
});

describe('GET, PUT and DELETE /api/projects/{projectId}', () => {
  it('reads a project with its ETag, and answers 304 to If-None-Match', async () => {
    const created = await createProject();
    const read = await api('GET', `/projects/${created.body.id}`, { token: await token({ roles: ['LMS.Reader'] }) });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
    expect(read.headers.get('etag')).toBe(created.headers.get('etag'));
    const again = await api('GET', `/projects/${created.body.id}`, { token: await admin(), headers: { 'If-None-Match': created.headers.get('etag')! } });
    expect(again.status).toBe(304);
  });

  it('answers 404 for missing, malformed and other-tenant ids', async () => {
    const created = await createProject();
    const other = await token({ tenant: OTHER_TENANT, roles: ['LMS.Admin'] });
    for (const [id, caller] of [
      ['PRJ-999999999', await admin()],
      ['..%2F..%2Fetc', await admin()],
      ['%F0%9F%98%80', await admin()],
      ['x'.repeat(5000), await admin()],
      [created.body.id, other],
    ] as const) {
      const response = await api('GET', `/projects/${id}`, { token: caller });
      expect(response.status, id.slice(0, 20)).toBe(404);
      expect(response.body.error).toBe('Not Found');
    }
    expect((await api('PUT', `/projects/${created.body.id}`, { token: other, body: { name: 'Hijack' } })).status).toBe(404);
    expect((await api('DELETE', `/projects/${created.body.id}`, { token: other })).status).toBe(404);
    expect((await api('GET', `/projects/${created.body.id}`, { token: await admin() })).body.name).toBe(created.body.name);
  });

  it('replaces only the fields given and keeps the owner among the members', async () => {
    const created = (await createProject({ description: 'keep me', members: ['m1@contoso.test'] })).body;
    const newOwner = uniqueEmail('new-owner');
    const updated = await api('PUT', `/projects/${created.id}`, { token: await admin(), body: { name: 'Renamed', owner: newOwner } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'Renamed', description: 'keep me', owner: newOwner, status: 'Active' });
    expect(updated.body.members).toEqual([newOwner, created.owner, 'm1@contoso.test']);
    expect(updated.body.updatedAt > created.updatedAt).toBe(true);
    const emptied = await api('PUT', `/projects/${created.id}`, { token: await admin(), body: { members: [] } });
    expect(emptied.body.members).toEqual([newOwner]);
  });

  it('changes nothing for a PUT of what is stored, once normalised: the same ETag and updatedAt, and no project.updated', async () => {
    const adminToken = await admin();
    const owner = uniqueEmail();
    const created = await createProject({ name: 'Café hooked', description: 'As is', owner, members: ['m1@contoso.test'] });
    const { id } = created.body;
    const etag = created.headers.get('etag')!;
    const unchanged = [
      { status: 'Active' },
      { name: 'Café hooked' },
      // Trimmed and NFC-normalised as a name is stored: the same name.
      { name: '  Cafe\u0301 hooked ' },
      // Lower-cased, de-duplicated, with the owner: the same members.
      { members: ['M1@Contoso.test', 'm1@contoso.test'] },
      { members: [owner, 'm1@contoso.test'], owner: owner.toUpperCase() },
      { name: 'Café hooked', description: 'As is', status: 'Active', owner, members: ['m1@contoso.test'] },
    ];
    for (const body of unchanged) {
      const response = await api('PUT', `/projects/${id}`, { token: adminToken, body, headers: { 'If-Match': etag } });
      expect(response.status, JSON.stringify(body)).toBe(200);
      expect(response.body, JSON.stringify(body)).toEqual(created.body);
      expect(response.headers.get('etag'), JSON.stringify(body)).toBe(etag);
    }
    const read = await api('GET', `/projects/${id}`, { token: adminToken });
    expect(read.body).toEqual(created.body);
    expect(read.headers.get('etag')).toBe(etag);
    expect(await eventsAbout(adminToken, 'project.updated', id, created.body.createdAt)).toEqual([]);
  });

  it('still refuses a stale If-Match with 412 when nothing would change, and still writes a real change with its event', async () => {
    const adminToken = await admin();
    const created = await createProject({ name: 'Hooked' });
    const { id } = created.body;
    const etag = created.headers.get('etag')!;
    const stale = await api('PUT', `/projects/${id}`, { token: adminToken, body: { status: 'Active' }, headers: { 'If-Match': '"stale"' } });
    expect(stale.status).toBe(412);

    const changed = await api('PUT', `/projects/${id}`, { token: adminToken, body: { name: 'Hooked', status: 'OnHold' }, headers: { 'If-Match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ name: 'Hooked', status: 'OnHold' });
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(changed.body.updatedAt > created.body.updatedAt).toBe(true);
    const events = await eventsAbout(adminToken, 'project.updated', id, created.body.createdAt);
    expect(events.map((event) => event.data)).toEqual([changed.body]);
    // The tag it had before the change no longer matches, even for a PUT that would change nothing now.
    expect((await api('PUT', `/projects/${id}`, { token: adminToken, body: { status: 'OnHold' }, headers: { 'If-Match': etag } })).status).toBe(412);
  });

  it('refuses an empty update', async () => {
    const created = (await createProject()).body;
    const response = await api('PUT', `/projects/${created.id}`, { token: await admin(), body: {} });
    expect(response.status).toBe(400);
  });

  it.each([
    ['Active', 'OnHold', 200],
    ['Active', 'Completed', 200],
    ['Active', 'Archived', 200],
    ['Active', 'Planning', 409],
    ['Active', 'Active', 200],
    ['OnHold', 'Active', 200],
    ['OnHold', 'Archived', 200],
    ['OnHold', 'Completed', 409],
    ['OnHold', 'Planning', 409],
    ['Completed', 'Active', 200],
    ['Completed', 'Archived', 200],
    ['Completed', 'OnHold', 409],
    ['Completed', 'Planning', 409],
    ['Archived', 'Active', 409],
    ['Archived', 'Archived', 409],
  ])('moves %s → %s: %i', async (from, to, expected) => {
    const adminToken = await admin();
    const created = (await createProject()).body;
    if (from !== 'Active') {
      const path = from === 'Archived' ? ['Archived'] : [from];
      for (const step of path) expect((await api('PUT', `/projects/${created.id}`, { token: adminToken, body: { status: step } })).status).toBe(200);
    }
    const response = await api('PUT', `/projects/${created.id}`, { token: adminToken, body: { status: to } });
    expect(response.status).toBe(expected);
    if (expected === 409) {
      expect(response.body.error).toBe('Conflict');
      const current = await api('GET', `/projects/${created.id}`, { token: adminToken });
      expect(current.body.status).toBe(from);
    } else {
      expect(response.body.status).toBe(to);
    }
  });

  it('names the allowed next states when refusing a move', async () => {
    const created = (await createProject()).body;
    const response = await api('PUT', `/projects/${created.id}`, { token: await admin(), body: { status: 'Planning' } });
    expect(response.body.message).toContain('OnHold, Completed, Archived');
  });

  it('keeps an Archived project read-only but deletable', async () => {
    const adminToken = await admin();
    const created = (await createProject()).body;
    await api('PUT', `/projects/${created.id}`, { token: adminToken, body: { status: 'Archived' } });
    const rename = await api('PUT', `/projects/${created.id}`, { token: adminToken, body: { name: 'Too late' } });
    expect(rename.status).toBe(409);
    // Read-only even for a PUT that would change nothing.
    const archived = await api('GET', `/projects/${created.id}`, { token: adminToken });
    for (const body of [{ name: created.name }, { status: 'Archived' }]) {
      const unchanged = await api('PUT', `/projects/${created.id}`, { token: adminToken, body, headers: { 'If-Match': archived.headers.get('etag')! } });
      expect(unchanged.status, JSON.stringify(body)).toBe(409);
      expect(unchanged.body.message, JSON.stringify(body)).toMatch(/archived/i);
    }
    expect((await api('DELETE', `/projects/${created.id}`, { token: adminToken })).status).toBe(204);
  });

  it('honours If-Match on PUT and DELETE', async () => {
    const adminToken = await admin();
    const created = await createProject();
    const etag = created.headers.get('etag')!;
    const stale = '"not-the-current-version"';
    expect((await api('PUT', `/projects/${created.body.id}`, { token: adminToken, body: { name: 'X' }, headers: { 'If-Match': stale } })).status).toBe(412);
    const updated = await api('PUT', `/projects/${created.body.id}`, { token: adminToken, body: { name: 'Y' }, headers: { 'If-Match': etag } });
    expect(updated.status).toBe(200);
    expect(updated.headers.get('etag')).not.toBe(etag);
    const replay = await api('PUT', `/projects/${created.body.id}`, { token: adminToken, body: { name: 'Z' }, headers: { 'If-Match': etag } });
    expect(replay.status).toBe(412);
    expect(replay.body.error).toBe('Precondition Failed');
    expect((await api('DELETE', `/projects/${created.body.id}`, { token: adminToken, headers: { 'If-Match': etag } })).status).toBe(412);
    expect((await api('DELETE', `/projects/${created.body.id}`, { token: adminToken, headers: { 'If-Match': updated.headers.get('etag')! } })).status).toBe(
      204,
    );
  });

  it('gives exactly one of 20 concurrent PUTs with the same If-Match a 200', async () => {
    const adminToken = await admin();
    const created = await createProject();
    const etag = created.headers.get('etag')!;
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        api('PUT', `/projects/${created.body.id}`, { token: adminToken, body: { name: `Writer ${index}` }, headers: { 'If-Match': etag } }),
      ),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([200, ...Array(19).fill(412)]);
  });

  it('deletes with 204, then 404', async () => {
    const adminToken = await admin();
    const created = (await createProject()).body;
    const deleted = await api('DELETE', `/projects/${created.id}`, { token: adminToken });
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBe('');
    expect(deleted.headers.get('content-type')).toBeNull();
    expect((await api('DELETE', `/projects/${created.id}`, { token: adminToken })).status).toBe(404);
    expect((await api('GET', `/projects/${created.id}`, { token: adminToken })).status).toBe(404);
  });
});
