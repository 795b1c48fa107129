/**
 * The client package (client/) as its users get it: imported by its name, so that this runs the
 * built `client/dist` and type-checks against its declarations, not the sources.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createLmsClient, LmsApiError, unwrap, type ListPath, type Project } from '@lms-platform/api-client';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { stack, token, uniqueEmail } from '../support/stack.js';

const run = promisify(execFile);
const appRoot = fileURLToPath(new URL('../../', import.meta.url));
const bin = (name: string) => join(appRoot, 'node_modules', '.bin', name);

const lms = createLmsClient({ baseUrl: stack.apiBaseUrl, token: () => token({ roles: ['LMS.Admin'] }) });

describe('the client package (@lms-platform/api-client)', () => {
  it('has the types openapi-typescript generates from the current openapi.json', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'lms-client-'));
    try {
      await run(bin('openapi-typescript'), ['openapi.json', '--output', join(folder, 'schema.ts')], { cwd: appRoot });
      const generated = await readFile(join(folder, 'schema.ts'), 'utf8');
      const committed = await readFile(join(appRoot, 'client', 'src', 'schema.ts'), 'utf8');
      expect(generated === committed, 'client/src/schema.ts is stale: run `npm run openapi`').toBe(true);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('has the version of the API it describes', async () => {
    const { version } = JSON.parse(await readFile(join(appRoot, 'openapi.json'), 'utf8')).info;
    const client = JSON.parse(await readFile(join(appRoot, 'client', 'package.json'), 'utf8'));
    expect(client.version).toBe(version);
    expect(version).toMatch(/^1\.\d+\.\d+$/);
  });

  // tsc reads vitest's and the local stack's types too: slow on a busy machine.
  it('type-checks, with this test as its typed use of the built declarations', { timeout: 90_000 }, async () => {
    await expect(run(bin('tsc'), ['-p', 'test/openapi/client.tsconfig.json'], { cwd: appRoot })).resolves.toBeDefined();
  });

  it('drives the API: create, list, read, update with If-Match, delete', async () => {
    const owner = uniqueEmail('client');
    const created = await lms.POST('/projects', {
      body: { name: 'Typed client', description: 'Made through client/', owner },
      params: { header: { 'Idempotency-Key': `client-${owner}` } },
    });
    expect(created.response.status).toBe(201);
    const project = unwrap(created);
    expect(project).toMatchObject({ name: 'Typed client', status: 'Active', owner });

    const listed = unwrap(await lms.GET('/projects', { params: { query: { owner } } }));
    expect(listed).toEqual([project]);

    const path = { projectId: project.id };
    const read = await lms.GET('/projects/{projectId}', { params: { path } });
    expect(unwrap(read)).toEqual(project);
    const etag = read.response.headers.get('etag')!;

    const updated = await lms.PUT('/projects/{projectId}', { params: { path, header: { 'If-Match': etag } }, body: { status: 'OnHold' } });
    expect(unwrap(updated).status).toBe('OnHold');

    const deleted = await lms.DELETE('/projects/{projectId}', { params: { path, header: { 'If-Match': updated.response.headers.get('etag')! } } });
    expect(deleted.response.status).toBe(204);
    expect((await lms.GET('/projects/{projectId}', { params: { path } })).response.status).toBe(404);
  });

  it('pages through a whole list by following Link to the last page', async () => {
    const owner = uniqueEmail('client-paging');
    const made: Project[] = [];
    for (const n of [1, 2, 3, 4, 5]) made.push(unwrap(await lms.POST('/projects', { body: { name: `Paged ${n}`, owner } })));
    const query = { owner, sort: 'createdAt' as const, limit: 2 };

    const pages: Project[][] = [];
    for await (const page of lms.pages('/projects', { params: { query } })) pages.push(page);
    expect(pages.map((page) => page.map((project) => project.name))).toEqual([['Paged 1', 'Paged 2'], ['Paged 3', 'Paged 4'], ['Paged 5']]);

    const all = await lms.all('/projects', { params: { query } });
    expectTypeOf(all).toEqualTypeOf<Project[]>();
    expect(all).toEqual(made);
  });

  it('offers paging for the paths that answer lists, and only those', () => {
    expectTypeOf<ListPath>().toEqualTypeOf<'/projects' | '/tasks' | '/users' | '/rag/jobs' | '/webhooks' | '/webhooks/{webhookId}/deliveries' | '/events'>();
  });

  it('surfaces error answers as LmsApiError: 404, 412, and 400 with its details', async () => {
    const missing = await lms
      .GET('/projects/{projectId}', { params: { path: { projectId: 'PRJ-999999' } } })
      .then(unwrap)
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(LmsApiError);
    expect(missing).toMatchObject({ status: 404, error: 'Not Found', requestId: expect.any(String) });

    const project = unwrap(await lms.POST('/projects', { body: { name: 'Raced', owner: uniqueEmail('client-error') } }));
    const stale = await lms
      .PUT('/projects/{projectId}', { params: { path: { projectId: project.id }, header: { 'If-Match': '"an-earlier-version"' } }, body: { status: 'OnHold' } })
      .then(unwrap)
      .catch((error: unknown) => error);
    expect(stale).toMatchObject({ name: 'LmsApiError', status: 412, error: 'Precondition Failed' });
    expect((stale as LmsApiError).response.headers.get('x-request-id')).toBe((stale as LmsApiError).requestId);

    const refused = await lms.all('/projects', { params: { query: { limit: 500 } } }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LmsApiError);
    expect(refused).toMatchObject({ status: 400, error: 'Bad Request', details: [{ path: expect.stringContaining('limit') }] });
  });
});
