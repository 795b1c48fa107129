import { describe, expect, it } from 'vitest';
import { api, eventsAbout, OTHER_TENANT, token, uniqueEmail, type ApiResponse } from '../support/stack.js';

const admin = () => token({ roles: ['LMS.Admin'] });
const member = () => token({ roles: ['LMS.Member'] });

async function newProject(): Promise<string> {
  const response = await api('POST', '/projects', { token: await admin(), body: { name: 'Tasks home', owner: uniqueEmail() } });
  expect(response.status).toBe(201);
  return response.body.id;
}

async function newTask(projectId: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const response = await api('POST', '/tasks', { token: await member(), body: { projectId, title: 'Write the syllabus', ...body }, headers });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response;
}

function ids(body: { id: string }[]): string[] {
  return body.map((task) => task.id);
}

describe('POST /api/tasks', () => {
  it('creates a task with defaults, Location and ETag', async () => {
    const projectId = await newProject();
    const response = await newTask(projectId);
    expect(response.body).toMatchObject({
      projectId,
      title: 'Write the syllabus',
      description: '',
      status: 'Todo',
      priority: 'Medium',
      assignee: null,
      dueDate: null,
    });
    expect(response.body.id).toMatch(/^TSK-\d+$/);
    expect(response.headers.get('location')).toBe(`/api/tasks/${response.body.id}`);
    expect(response.headers.get('etag')).toMatch(/^"[\w-]+"$/);
  });

  it('takes every field, lower-casing the assignee', async () => {
    const projectId = await newProject();
    const response = await newTask(projectId, {
      title: '締め切り',
      description: 'Long\ntext',
      status: 'InProgress',
      priority: 'Urgent',
      assignee: 'Kim@Contoso.test',
      dueDate: '2027-02-28',
    });
    expect(response.body).toMatchObject({ title: '締め切り', status: 'InProgress', priority: 'Urgent', assignee: 'kim@contoso.test', dueDate: '2027-02-28' });
  });

  it('answers 404 for a project that does not exist, or exists in another tenant', async () => {
    const projectId = await newProject();
    const missing = await api('POST', '/tasks', { token: await member(), body: { projectId: 'PRJ-999999999', title: 'x' } });
    expect(missing.status).toBe(404);
    const otherTenant = await api('POST', '/tasks', { token: await token({ tenant: OTHER_TENANT, roles: ['LMS.Admin'] }), body: { projectId, title: 'x' } });
    expect(otherTenant.status).toBe(404);
  });

  it('answers 409 for an Archived project', async () => {
    const projectId = await newProject();
    await api('PUT', `/projects/${projectId}`, { token: await admin(), body: { status: 'Archived' } });
    const response = await api('POST', '/tasks', { token: await member(), body: { projectId, title: 'Too late' } });
    expect(response.status).toBe(409);
    expect(response.body.error).toBe('Conflict');
  });

  it.each([
    ['an unknown project id format', { projectId: 'project-1', title: 'x' }, 'projectId'],
    ['a missing title', { projectId: 'PRJ-1001' }, 'title'],
    ['an unknown status', { projectId: 'PRJ-1001', title: 'x', status: 'Doing' }, 'status'],
    ['an unknown priority', { projectId: 'PRJ-1001', title: 'x', priority: 'Critical' }, 'priority'],
    ['an assignee that is not an e-mail', { projectId: 'PRJ-1001', title: 'x', assignee: 'kim' }, 'assignee'],
    ['a due date in another format', { projectId: 'PRJ-1001', title: 'x', dueDate: '28/02/2027' }, 'dueDate'],
    ['a due date that does not exist', { projectId: 'PRJ-1001', title: 'x', dueDate: '2027-02-30' }, 'dueDate'],
    ['a due date with a time', { projectId: 'PRJ-1001', title: 'x', dueDate: '2027-02-01T00:00:00Z' }, 'dueDate'],
    ['an unknown field', { projectId: 'PRJ-1001', title: 'x', owner: 'a@b.test' }, 'owner'],
  ])('refuses %s with 400', async (_, body, path) => {
    const response = await api('POST', '/tasks', { token: await member(), body });
    expect(response.status).toBe(400);
    expect(response.body.details.map((detail: { path: string }) => detail.path)).toContain(path);
  });

  it('replays an Idempotency-Key', async () => {
    const projectId = await newProject();
    const first = await newTask(projectId, {}, { 'Idempotency-Key': `task-${projectId}` });
    const second = await newTask(projectId, {}, { 'Idempotency-Key': `task-${projectId}` });
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const listed = await api('GET', `/tasks?projectId=${projectId}`, { token: await member() });
    expect(listed.body).toHaveLength(1);
  });

  it('gives concurrent creates distinct ids', async () => {
    const projectId = await newProject();
    const memberToken = await member();
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, index) => api('POST', '/tasks', { token: memberToken, body: { projectId, title: `Parallel ${index}` } })),
    );
    expect(responses.every((response) => response.status === 201)).toBe(true);
    expect(new Set(responses.map((response) => response.body.id)).size).toBe(30);
  });
});

describe('GET /api/tasks', () => {
  it('lists one project’s tasks and pages through them', async () => {
    const projectId = await newProject();
    const created: string[] = [];
    for (let index = 0; index < 5; index++) created.push((await newTask(projectId, { title: `Task ${index}` })).body.id);
    await newTask(await newProject());
    const seen: string[] = [];
    let path: string | undefined = `/tasks?projectId=${projectId}&limit=2`;
    while (path) {
      const page: ApiResponse<{ id: string }[]> = await api('GET', path, { token: await token({ roles: ['LMS.Reader'] }) });
      expect(page.status).toBe(200);
      seen.push(...ids(page.body));
      const link: string | null = page.headers.get('link');
      path = link ? /<[^>]*\/api(\/[^>]+)>/.exec(link)![1] : undefined;
    }
    expect(seen).toEqual([...created].reverse());
  });

  it('filters by assignee, status and due date (strictly before)', async () => {
    const projectId = await newProject();
    const kim = uniqueEmail('kim');
    const early = (await newTask(projectId, { assignee: kim, dueDate: '2027-01-10' })).body.id;
    const onTheDay = (await newTask(projectId, { assignee: kim, dueDate: '2027-01-15', status: 'Blocked' })).body.id;
    const undated = (await newTask(projectId, { assignee: kim })).body.id;
    await newTask(projectId, { dueDate: '2027-01-01' });
    const byAssignee = await api('GET', `/tasks?assignee=${encodeURIComponent(kim.toUpperCase())}&sort=createdAt`, { token: await member() });
    expect(ids(byAssignee.body)).toEqual([early, onTheDay, undated]);
    const dueBefore = await api('GET', `/tasks?projectId=${projectId}&assignee=${encodeURIComponent(kim)}&dueBefore=2027-01-15`, { token: await member() });
    expect(ids(dueBefore.body)).toEqual([early]);
    const blocked = await api('GET', `/tasks?projectId=${projectId}&status=Blocked`, { token: await member() });
    expect(ids(blocked.body)).toEqual([onTheDay]);
  });

  it('sorts by priority rank and by due date', async () => {
    const projectId = await newProject();
    const low = (await newTask(projectId, { priority: 'Low', dueDate: '2027-03-01' })).body.id;
    const urgent = (await newTask(projectId, { priority: 'Urgent', dueDate: '2027-01-01' })).body.id;
    const high = (await newTask(projectId, { priority: 'High', dueDate: '2027-02-01' })).body.id;
    const medium = (await newTask(projectId, { priority: 'Medium' })).body.id;
    const list = async (sort: string) => ids((await api('GET', `/tasks?projectId=${projectId}&sort=${sort}`, { token: await member() })).body);
    expect(await list('-priority')).toEqual([urgent, high, medium, low]);
    expect(await list('priority')).toEqual([low, medium, high, urgent]);
    // A task without a due date sorts first in ascending order and last in descending order.
    expect(await list('dueDate')).toEqual([medium, urgent, high, low]);
    expect(await list('-dueDate')).toEqual([low, high, urgent, medium]);
  });

  it.each([
    'projectId=PRJ-1%27%20OR%201%3D1',
    'status=Open',
    'assignee=%27%20OR%20%271%27%3D%271',
    'dueBefore=tomorrow',
    'dueBefore=2027-02-30',
    'sort=title',
    'limit=0',
    'page=2',
  ])('refuses %s with 400', async (query) => {
    const response = await api('GET', `/tasks?${query}`, { token: await member() });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('Bad Request');
  });

  it("never shows another tenant's tasks", async () => {
    const projectId = await newProject();
    await newTask(projectId);
    const response = await api('GET', `/tasks?projectId=${projectId}`, { token: await token({ tenant: OTHER_TENANT, roles: ['LMS.Reader'] }) });
    expect(response.status).toBe(200);
    expect(response.body).toEqual([]);
  });
});

describe('GET, PUT and DELETE /api/tasks/{taskId}', () => {
  it('reads, updates with If-Match, and deletes a task', async () => {
    const projectId = await newProject();
    const created = await newTask(projectId, { assignee: 'a@contoso.test' });
    const id = created.body.id;
    const read = await api('GET', `/tasks/${id}`, { token: await token({ roles: ['LMS.Reader'] }) });
    expect(read.body).toEqual(created.body);
    expect(read.headers.get('etag')).toBe(created.headers.get('etag'));

    const stale = await api('PUT', `/tasks/${id}`, { token: await member(), body: { status: 'Done' }, headers: { 'If-Match': '"stale"' } });
    expect(stale.status).toBe(412);
    const updated = await api('PUT', `/tasks/${id}`, {
      token: await member(),
      body: { status: 'Done', assignee: null, priority: 'High' },
      headers: { 'If-Match': read.headers.get('etag')! },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ status: 'Done', assignee: null, priority: 'High', title: 'Write the syllabus' });

    expect((await api('DELETE', `/tasks/${id}`, { token: await member() })).status).toBe(403);
    expect(
      (await api('DELETE', `/tasks/${id}`, { token: await token({ roles: ['LMS.Manager'] }), headers: { 'If-Match': read.headers.get('etag')! } })).status,
    ).toBe(412);
    expect((await api('DELETE', `/tasks/${id}`, { token: await token({ roles: ['LMS.Manager'] }) })).status).toBe(204);
    expect((await api('GET', `/tasks/${id}`, { token: await member() })).status).toBe(404);
  });

  it('changes nothing for a PUT of what is stored, once normalised: the same ETag and updatedAt, and no task.updated; a real change still is one', async () => {
    const memberToken = await member();
    const created = await newTask(await newProject(), { priority: 'Urgent', assignee: 'kim@contoso.test', description: 'As is' });
    const { id } = created.body;
    const etag = created.headers.get('etag')!;
    const unchanged = [
      { priority: 'Urgent' },
      { assignee: 'Kim@Contoso.test' },
      { title: ' Write the syllabus  ', dueDate: null },
      { title: 'Write the syllabus', description: 'As is', status: 'Todo', priority: 'Urgent', assignee: 'kim@contoso.test', dueDate: null },
    ];
    for (const body of unchanged) {
      const response = await api('PUT', `/tasks/${id}`, { token: memberToken, body, headers: { 'If-Match': etag } });
      expect(response.status, JSON.stringify(body)).toBe(200);
      expect(response.body, JSON.stringify(body)).toEqual(created.body);
      expect(response.headers.get('etag'), JSON.stringify(body)).toBe(etag);
    }
    expect((await api('GET', `/tasks/${id}`, { token: memberToken })).headers.get('etag')).toBe(etag);
    expect(await eventsAbout(memberToken, 'task.updated', id, created.body.createdAt)).toEqual([]);
    expect((await api('PUT', `/tasks/${id}`, { token: memberToken, body: { priority: 'Urgent' }, headers: { 'If-Match': '"stale"' } })).status).toBe(412);

    const changed = await api('PUT', `/tasks/${id}`, { token: memberToken, body: { priority: 'Low' }, headers: { 'If-Match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ priority: 'Low' });
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(changed.body.updatedAt > created.body.updatedAt).toBe(true);
    const events = await eventsAbout(memberToken, 'task.updated', id, created.body.createdAt);
    expect(events.map((event) => event.data)).toEqual([changed.body]);
  });

  it('refuses an empty update and a change of project', async () => {
    const id = (await newTask(await newProject())).body.id;
    expect((await api('PUT', `/tasks/${id}`, { token: await member(), body: {} })).status).toBe(400);
    expect((await api('PUT', `/tasks/${id}`, { token: await member(), body: { projectId: 'PRJ-1001' } })).status).toBe(400);
  });

  it('keeps the tasks of an Archived project read-only', async () => {
    const projectId = await newProject();
    const id = (await newTask(projectId)).body.id;
    await api('PUT', `/projects/${projectId}`, { token: await admin(), body: { status: 'Archived' } });
    expect((await api('PUT', `/tasks/${id}`, { token: await member(), body: { status: 'Done' } })).status).toBe(409);
    // Even a PUT that would change nothing.
    expect((await api('PUT', `/tasks/${id}`, { token: await member(), body: { status: 'Todo' } })).status).toBe(409);
    expect((await api('DELETE', `/tasks/${id}`, { token: await admin() })).status).toBe(409);
    expect((await api('GET', `/tasks/${id}`, { token: await member() })).status).toBe(200);
  });

  it('answers 404 for missing, malformed and other-tenant task ids', async () => {
    const id = (await newTask(await newProject())).body.id;
    const other = await token({ tenant: OTHER_TENANT, roles: ['LMS.Admin'] });
    for (const [path, caller] of [
      [`/tasks/TSK-999999999`, await member()],
      [`/tasks/..%2F${id}`, await member()],
      [`/tasks/${'9'.repeat(5000)}`, await member()],
      [`/tasks/${id}`, other],
    ] as const) {
      expect((await api('GET', path, { token: caller })).status).toBe(404);
    }
    expect((await api('PUT', `/tasks/${id}`, { token: other, body: { title: 'Hijack' } })).status).toBe(404);
    expect((await api('DELETE', `/tasks/${id}`, { token: other })).status).toBe(404);
  });

  it('each role against each task operation', async () => {
    const projectId = await newProject();
    const expectations: [string, { read: number; create: number; update: number; remove: number }][] = [
      ['LMS.Reader', { read: 200, create: 403, update: 403, remove: 403 }],
      ['LMS.Member', { read: 200, create: 201, update: 200, remove: 403 }],
      ['LMS.Manager', { read: 200, create: 201, update: 200, remove: 204 }],
      ['LMS.Admin', { read: 200, create: 201, update: 200, remove: 204 }],
    ];
    for (const [role, expected] of expectations) {
      const caller = await token({ roles: [role] });
      const id = (await newTask(projectId)).body.id;
      expect((await api('GET', `/tasks?projectId=${projectId}`, { token: caller })).status, role).toBe(expected.read);
      expect((await api('GET', `/tasks/${id}`, { token: caller })).status, role).toBe(expected.read);
      expect((await api('POST', '/tasks', { token: caller, body: { projectId, title: role } })).status, role).toBe(expected.create);
      expect((await api('PUT', `/tasks/${id}`, { token: caller, body: { title: role } })).status, role).toBe(expected.update);
      expect((await api('DELETE', `/tasks/${id}`, { token: caller })).status, role).toBe(expected.remove);
    }
  });
});

describe('deleting a project', () => {
  it('deletes its tasks with it', async () => {
    const projectId = await newProject();
    const taskIds: string[] = [];
    for (let index = 0; index < 5; index++) taskIds.push((await newTask(projectId)).body.id);
    const keeper = (await newTask(await newProject())).body.id;
    expect((await api('DELETE', `/projects/${projectId}`, { token: await admin() })).status).toBe(204);
    for (const id of taskIds) expect((await api('GET', `/tasks/${id}`, { token: await member() })).status).toBe(404);
    expect((await api('GET', `/tasks?projectId=${projectId}`, { token: await member() })).body).toEqual([]);
    expect((await api('GET', `/tasks/${keeper}`, { token: await member() })).status).toBe(200);
  });

  it('deletes more tasks than one batch holds', async () => {
    const projectId = await newProject();
    const memberToken = await member();
    for (let start = 0; start < 230; start += 46) {
      await Promise.all(
        Array.from({ length: 46 }, (_, index) => api('POST', '/tasks', { token: memberToken, body: { projectId, title: `Bulk ${start + index}` } })),
      );
    }
    expect((await api('GET', `/tasks?projectId=${projectId}&limit=200`, { token: memberToken })).body).toHaveLength(200);
    expect((await api('DELETE', `/projects/${projectId}`, { token: await admin() })).status).toBe(204);
    expect((await api('GET', `/tasks?projectId=${projectId}&limit=200`, { token: memberToken })).body).toEqual([]);
  });

  it('leaves no orphan task when task creates race the delete', async () => {
    const projectId = await newProject();
    const memberToken = await member();
    await newTask(projectId);
    const creates = Array.from({ length: 40 }, (_, index) => api('POST', '/tasks', { token: memberToken, body: { projectId, title: `Racer ${index}` } }));
    const deletion = api('DELETE', `/projects/${projectId}`, { token: await admin() });
    const [deleted, ...results] = await Promise.all([deletion, ...creates]);
    expect(deleted.status).toBe(204);
    for (const result of results) expect([201, 404]).toContain(result.status);
    const survivors = results.filter((result) => result.status === 201);
    for (const survivor of survivors) expect((await api('GET', `/tasks/${survivor.body.id}`, { token: memberToken })).status).toBe(404);
    expect((await api('GET', `/tasks?projectId=${projectId}`, { token: memberToken })).body).toEqual([]);
  });
});
