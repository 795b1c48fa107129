import { beforeAll, describe, expect, it } from 'vitest';
import { api, OTHER_TENANT, token, uniqueEmail, type ApiResponse } from '../support/stack.js';
import { ApiDescription } from './description.js';

/**
 * Every operation's answers, good and bad, checked against the document the API serves: the status
 * is documented for the operation, the required headers are there, and the body fits the schema.
 * The calls run in the second local tenant so that its RAG jobs never meet the RAG tests' jobs.
 */

let description: ApiDescription;
const reached = new Set<string>();

beforeAll(async () => {
  description = await ApiDescription.served();
});

type Options = Parameters<typeof api>[2];

/** Calls the API and expects the answer to be one the document describes, with the status given. */
async function call(method: string, path: string, status: number | number[], options: Options = {}): Promise<ApiResponse<any>> {
  const response = await api(method, path, options);
  expect(description.problems(method, path, response), `${method} ${path}`).toEqual([]);
  expect([status].flat(), `${method} ${path}: ${JSON.stringify(response.body)}`).toContain(response.status);
  const operation = description.find(method, path)!;
  reached.add(`${operation.method} ${operation.path}`);
  return response;
}

const as = (roles: string[], username?: string) => token({ tenant: OTHER_TENANT, roles, ...(username ? { username } : {}) });

describe('answers conform to the OpenAPI document', () => {
  it('projects', async () => {
    const admin = await as(['LMS.Admin']);
    const owner = uniqueEmail();
    const key = `conformance-${owner}`;
    const body = { name: 'Conformance', owner, members: ['kim@contoso.test'] };
    const created = await call('POST', '/projects', 201, { token: admin, body, headers: { 'idempotency-key': key } });
    const id = created.body.id as string;
    await call('POST', '/projects', 201, { token: admin, body, headers: { 'idempotency-key': key } });
    await call('POST', '/projects', 422, { token: admin, body: { ...body, name: 'Other' }, headers: { 'idempotency-key': key } });
    await call('POST', '/projects', 400, { token: admin, body: { ...body, colour: 'red' } });
    await call('POST', '/projects', 400, { token: admin, body: '{"name":' });
    await call('POST', '/projects', 415, { token: admin, body: 'name=x', headers: { 'content-type': 'text/plain' } });
    await call('POST', '/projects', 413, { token: admin, body: { name: 'x'.repeat(1024 * 1024 + 1) } });
    await call('POST', '/projects', 403, { token: await as(['LMS.Reader']), body });
    await call('POST', '/projects', 401, { body });

    await call('POST', '/projects', 201, { token: admin, body: { name: 'Conformance 2', owner } });
    const page = await call('GET', `/projects?owner=${encodeURIComponent(owner)}&limit=1`, 200, { token: admin });
    expect(page.headers.get('link')).toContain('rel="next"');
    await call('GET', `/projects?stauts=Active`, 400, { token: admin });
    await call('GET', `/projects?cursor=forged`, 400, { token: admin });

    const read = await call('GET', `/projects/${id}`, 200, { token: admin });
    const etag = read.headers.get('etag')!;
    await call('GET', `/projects/${id}`, 304, { token: admin, headers: { 'if-none-match': etag } });
    await call('GET', '/projects/PRJ-999999', 404, { token: admin });

    const updated = await call('PUT', `/projects/${id}`, 200, { token: admin, body: { status: 'OnHold' }, headers: { 'if-match': etag } });
    await call('PUT', `/projects/${id}`, 412, { token: admin, body: { name: 'Stale' }, headers: { 'if-match': etag } });
    await call('PUT', `/projects/${id}`, 400, { token: admin, body: { name: 'Bad' }, headers: { 'if-match': 'not-a-tag' } });
    await call('PUT', `/projects/${id}`, 409, { token: admin, body: { status: 'Completed' } });

    await call('DELETE', `/projects/${id}`, 412, { token: admin, headers: { 'if-match': etag } });
    await call('DELETE', `/projects/${id}`, 204, { token: admin, headers: { 'if-match': updated.headers.get('etag')! } });
    await call('DELETE', `/projects/${id}`, 404, { token: admin });
  });

  it('tasks', async () => {
    const admin = await as(['LMS.Admin']);
    const project = await call('POST', '/projects', 201, { token: admin, body: { name: 'Conformance tasks', owner: uniqueEmail() } });
    const projectId = project.body.id as string;
    const created = await call('POST', '/tasks', 201, {
      token: admin,
      body: { projectId, title: 'Conformance', priority: 'High', dueDate: '2027-01-15' },
      headers: { 'idempotency-key': `conformance-${projectId}` },
    });
    const id = created.body.id as string;
    await call('POST', '/tasks', 404, { token: admin, body: { projectId: 'PRJ-999999', title: 'Nowhere' } });
    await call('GET', `/tasks?projectId=${projectId}&sort=-priority`, 200, { token: admin });

    const read = await call('GET', `/tasks/${id}`, 200, { token: admin });
    await call('GET', `/tasks/${id}`, 304, { token: admin, headers: { 'if-none-match': read.headers.get('etag')! } });
    const updated = await call('PUT', `/tasks/${id}`, 200, { token: admin, body: { status: 'Done' }, headers: { 'if-match': read.headers.get('etag')! } });
    await call('PUT', `/tasks/${id}`, 412, { token: admin, body: { status: 'Todo' }, headers: { 'if-match': read.headers.get('etag')! } });
    await call('DELETE', `/tasks/${id}`, 403, { token: await as(['LMS.Member']) });
    await call('DELETE', `/tasks/${id}`, 204, { token: admin, headers: { 'if-match': updated.headers.get('etag')! } });
    await call('GET', `/tasks/${id}`, 404, { token: admin });

    await call('PUT', `/projects/${projectId}`, 200, { token: admin, body: { status: 'Archived' } });
    await call('POST', '/tasks', 409, { token: admin, body: { projectId, title: 'Too late' } });
  });

  it('users, recorded and from the directory', async () => {
    const reader = await as(['LMS.Reader']);
    await call('GET', '/users/me', 200, { token: reader });
    await call('GET', '/users/me', 403, { token: await token({ tenant: OTHER_TENANT, kind: 'app', roles: ['LMS.Reader'] }) });
    await call('GET', '/users?role=LMS.Reader&limit=5', 200, { token: reader });
    await call('GET', '/users?source=directory&limit=5', 200, { token: reader });
    await call('GET', '/users?source=directory&role=LMS.Admin', 400, { token: reader });
    await call('GET', '/users?source=directory', 403, { token: await as(['LMS.Reader'], 'needs-consent-conformance@contoso.test') });
    const challenge = await call('GET', '/users?source=directory', 401, { token: await as(['LMS.Reader'], 'needs-mfa-conformance@contoso.test') });
    expect(challenge.headers.get('www-authenticate')).toContain('insufficient_claims');
  });

  it('RAG index jobs', async () => {
    const manager = await as(['LMS.Manager']);
    const started = await call('POST', '/rag/index', [202, 409], { token: manager, body: {} });
    // A job of this tenant may still be running from an earlier run of this test; the 409 names it.
    const jobId = (started.status === 202 ? started.body.jobId : started.body.activeJobId) as string;
    // The 409 names the active job in `activeJobId`, which the document declares (its Error schema takes no other field): polled,
    // since the job may end between two calls.
    await expect.poll(async () => (await call('POST', '/rag/index', [202, 409], { token: manager, body: { mode: 'full' } })).status).toBe(409);
    await call('POST', '/rag/index', 400, { token: manager, body: { mode: 'sideways' } });
    const job = await call('GET', `/rag/jobs/${jobId}`, 200, { token: manager });
    await call('GET', `/rag/jobs/${jobId}`, [200, 304], { token: manager, headers: { 'if-none-match': job.headers.get('etag')! } });
    await call('GET', '/rag/jobs/00000000-0000-4000-8000-000000000000', 404, { token: manager });
    await call('GET', '/rag/jobs?limit=2', 200, { token: manager });
    await call('GET', '/rag/jobs', 403, { token: await as(['LMS.Member']) });
    // Cancelling: 202 while the job has not ended, 409 once it has.
    await call('POST', `/rag/jobs/${jobId}/cancel`, [202, 409], { token: manager });
    await expect.poll(async () => (await call('POST', `/rag/jobs/${jobId}/cancel`, [202, 409], { token: manager })).status, { timeout: 30_000 }).toBe(409);
    await call('POST', '/rag/jobs/00000000-0000-4000-8000-000000000000/cancel', 404, { token: manager });
    await call('POST', `/rag/jobs/${jobId}/cancel`, 403, { token: await as(['LMS.Member']) });
  });

  it('webhooks', async () => {
    const admin = await as(['LMS.Admin']);
    const created = await call('POST', '/webhooks', 201, { token: admin, body: { url: 'http://127.0.0.1:9/hook', events: ['task.created'] } });
    const id = created.body.id as string;
    await call('POST', '/webhooks', 400, { token: admin, body: { url: 'https://10.0.0.1/hook' } });
    await call('POST', '/webhooks', 403, { token: await as(['LMS.Manager']), body: { url: 'http://127.0.0.1:9/hook' } });
    await call('GET', '/webhooks?limit=5', 200, { token: admin });
    const read = await call('GET', `/webhooks/${id}`, 200, { token: admin });
    await call('GET', `/webhooks/${id}`, 304, { token: admin, headers: { 'if-none-match': read.headers.get('etag')! } });
    await call('GET', '/webhooks/WHK-999999', 404, { token: admin });
    await call('PUT', `/webhooks/${id}`, 200, { token: admin, body: { description: 'Conformance' }, headers: { 'if-match': read.headers.get('etag')! } });
    await call('PUT', `/webhooks/${id}`, 412, { token: admin, body: { description: 'Stale' }, headers: { 'if-match': read.headers.get('etag')! } });
    const pinged = await call('POST', `/webhooks/${id}/ping`, 202, { token: admin });
    await call('GET', `/webhooks/${id}/deliveries?limit=5`, 200, { token: admin });
    await call('POST', `/webhooks/${id}/deliveries/${pinged.body.id}/retry`, 202, { token: admin });
    await call('POST', `/webhooks/${id}/deliveries/dlv_nothing/retry`, 404, { token: admin });
    await call('POST', `/webhooks/${id}/rotate-secret`, 200, { token: admin });
    await call('DELETE', `/webhooks/${id}`, 204, { token: admin });
    await call('POST', `/webhooks/${id}/ping`, 404, { token: admin });
  });

  it('events', async () => {
    const reader = await as(['LMS.Reader']);
    await call('POST', '/projects', 201, { token: await as(['LMS.Admin']), body: { name: 'Eventful' } });
    const listed = await call('GET', '/events?type=project.created&limit=2', 200, { token: reader });
    const eventId = (listed.body as { id: string }[])[0]!.id;
    await call('GET', `/events?since=${encodeURIComponent('2026-01-01T00:00:00+09:00')}`, 200, { token: reader });
    await call('GET', '/events?type=webhook.ping', 400, { token: reader });
    await call('GET', '/events?since=yesterday', 400, { token: reader });
    const read = await call('GET', `/events/${eventId}`, 200, { token: reader });
    await call('GET', `/events/${eventId}`, 304, { token: reader, headers: { 'if-none-match': read.headers.get('etag')! } });
    await call('GET', '/events/msg_00000000000000000000000000000000', 404, { token: reader });
    await call('GET', '/events/nothing', 404, { token: reader });
    await call('GET', '/events', 401);
  });

  it('the API description and its page', async () => {
    await call('GET', '/openapi.json', 200);
    await call('GET', '/docs', 200);
    await call('GET', '/docs/swagger-ui.css', 200);
    await call('GET', '/docs/nothing.js', 404);
  });

  it('reached every operation of the document', () => {
    expect([...reached].sort()).toEqual(description.operations.map((operation) => `${operation.method} ${operation.path}`).sort());
  });
});
