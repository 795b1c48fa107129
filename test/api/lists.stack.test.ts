/**
 * What every list answers beside its items' fields: each item of a resource that has a read of its own
 * carries `etag`, the ETag that read answers, so that a change after a list needs no read first.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { api, token, uniqueEmail, type ApiResponse } from '../support/stack.js';

type Tagged = { etag: string } & Record<string, unknown>;

/**
 * The etag each item of the list carries, against the ETag its read answers: the same exactly when the
 * read shows the item as listed (a webhook or a job may change between the two calls), and the same for
 * at least one item.
 */
async function expectEachItemTaggedAsItsRead(bearer: string, listPath: string, readPath: (item: Tagged) => string): Promise<Tagged[]> {
  const list: ApiResponse<Tagged[]> = await api('GET', listPath, { token: bearer });
  expect(list.status, listPath).toBe(200);
  let unchanged = 0;
  for (const item of list.body) {
    const read = await api('GET', readPath(item), { token: bearer });
    expect(read.status).toBe(200);
    const { etag, ...fields } = item;
    const same = isDeepStrictEqual(fields, read.body);
    expect(etag === read.headers.get('etag'), `${readPath(item)}: listed ${JSON.stringify(item)}, read ${JSON.stringify(read.body)}`).toBe(same);
    if (same) unchanged++;
  }
  expect(unchanged, listPath).toBeGreaterThan(0);
  return list.body;
}

describe('list items carry their ETag', () => {
  it('projects and tasks: the etag a list gives is the read ETag, and If-Match takes it straight from the list', async () => {
    const admin = await token({ roles: ['LMS.Admin'] });
    const owner = uniqueEmail('listed');
    const project = await api<{ id: string }>('POST', '/projects', { token: admin, body: { name: 'Listed', owner } });
    await api('POST', '/projects', { token: admin, body: { name: 'Listed too', owner } });
    await api('POST', '/tasks', { token: admin, body: { projectId: project.body.id, title: 'Listed task', dueDate: '2027-01-15' } });
    const [first] = await expectEachItemTaggedAsItsRead(admin, `/projects?owner=${encodeURIComponent(owner)}`, (item) => `/projects/${item.id as string}`);
    const [task] = await expectEachItemTaggedAsItsRead(admin, `/tasks?projectId=${project.body.id}`, (item) => `/tasks/${item.id as string}`);

    const changed = await api('PUT', `/projects/${first!.id as string}`, {
      token: admin,
      body: { description: 'Changed' },
      headers: { 'if-match': first!.etag },
    });
    expect(changed.status).toBe(200);
    const stale = await api('PUT', `/projects/${first!.id as string}`, { token: admin, body: { description: 'Stale' }, headers: { 'if-match': first!.etag } });
    expect(stale.status).toBe(412);
    const done = await api('PUT', `/tasks/${task!.id as string}`, { token: admin, body: { status: 'Done' }, headers: { 'if-match': task!.etag } });
    expect(done.status).toBe(200);
  });

  it('webhooks, RAG jobs and events', async () => {
    const admin = await token({ roles: ['LMS.Admin'] });
    await api('POST', '/webhooks', { token: admin, body: { url: 'http://127.0.0.1:9/listed', events: ['task.created'] } });
    await expectEachItemTaggedAsItsRead(admin, '/webhooks?limit=5', (item) => `/webhooks/${item.id as string}`);
    // A job of this tenant may be running already (the RAG tests'): either way there is one to list.
    const started = await api<{ jobId?: string; activeJobId?: string }>('POST', '/rag/index', { token: admin, body: {} });
    expect([202, 409]).toContain(started.status);
    await expectEachItemTaggedAsItsRead(admin, '/rag/jobs?limit=5', (item) => `/rag/jobs/${item.jobId as string}`);
    await expectEachItemTaggedAsItsRead(admin, '/events?limit=5', (item) => `/events/${item.id as string}`);
  });
});
