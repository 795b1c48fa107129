import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createLmsClient, nextCursor } from '../../client/index.js';
import { stack, token, uniqueEmail } from '../support/stack.js';

const run = promisify(execFile);
const appRoot = fileURLToPath(new URL('../../', import.meta.url));
const bin = (name: string) => join(appRoot, 'node_modules', '.bin', name);

describe('the typed client (client/)', () => {
  it('has the types openapi-typescript generates from the current openapi.json', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'lms-client-'));
    try {
      await run(bin('openapi-typescript'), ['openapi.json', '--output', join(folder, 'schema.d.ts')], { cwd: appRoot });
      const generated = await readFile(join(folder, 'schema.d.ts'), 'utf8');
      expect(generated === (await readFile(join(appRoot, 'client', 'schema.d.ts'), 'utf8')), 'client/schema.d.ts is stale: run `npm run openapi`').toBe(true);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  // tsc reads vitest's and the local stack's types too: slow on a busy machine.
  it('type-checks, with this test as its typed use', { timeout: 90_000 }, async () => {
    await expect(run(bin('tsc'), ['-p', 'client/tsconfig.json'], { cwd: appRoot })).resolves.toBeDefined();
  });

  it('drives the API: create, list, read, update with If-Match, delete', async () => {
    const lms = createLmsClient({ baseUrl: stack.apiBaseUrl, token: () => token({ roles: ['LMS.Admin'] }) });
    const owner = uniqueEmail('client');

    const created = await lms.POST('/projects', {
      body: { name: 'Typed client', description: 'Made through client/', owner },
      params: { header: { 'Idempotency-Key': `client-${owner}` } },
    });
    expect(created.response.status).toBe(201);
    const project = created.data!;
    expect(project).toMatchObject({ name: 'Typed client', status: 'Active', owner });
    await lms.POST('/projects', { body: { name: 'Typed client, second', owner } });

    const firstPage = await lms.GET('/projects', { params: { query: { owner, sort: 'createdAt', limit: 1 } } });
    expect(firstPage.data?.map((listed) => listed.id)).toEqual([project.id]);
    const cursor = nextCursor(firstPage.response);
    expect(cursor).toBeDefined();
    const secondPage = await lms.GET('/projects', { params: { query: { owner, sort: 'createdAt', limit: 1, cursor } } });
    expect(secondPage.data?.map((listed) => listed.name)).toEqual(['Typed client, second']);

    const read = await lms.GET('/projects/{projectId}', { params: { path: { projectId: project.id } } });
    expect(read.data).toEqual(project);
    const etag = read.response.headers.get('etag')!;

    const path = { projectId: project.id };
    const updated = await lms.PUT('/projects/{projectId}', { params: { path, header: { 'If-Match': etag } }, body: { status: 'OnHold' } });
    expect(updated.data?.status).toBe('OnHold');
    const stale = await lms.PUT('/projects/{projectId}', { params: { path, header: { 'If-Match': etag } }, body: { name: 'Lost update' } });
    expect(stale.error).toMatchObject({ status: 412, error: 'Precondition Failed' });

    const deleted = await lms.DELETE('/projects/{projectId}', { params: { path, header: { 'If-Match': updated.response.headers.get('etag')! } } });
    expect(deleted.response.status).toBe(204);
    const gone = await lms.GET('/projects/{projectId}', { params: { path } });
    expect(gone.error).toMatchObject({ status: 404, error: 'Not Found' });
  });
});
