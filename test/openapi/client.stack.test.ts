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
import {
  BadRequestError,
  ConflictError,
  createLmsClient,
  ForbiddenError,
  LmsApiError,
  NotFoundError,
  PreconditionFailedError,
  ThrottledError,
  UnauthorizedError,
  unwrap,
  verifyWebhook,
  WebhookVerificationError,
  type components,
  type CreatePath,
  type ListPath,
  type Project,
  type RagJob,
} from '@lms-platform/api-client';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { startWebhookReceiver, type ReceivedDelivery } from '../../tools/webhook-receiver.js';
import { stack, token, uniqueEmail } from '../support/stack.js';
import { between, type Step } from './client-servers.js';

const run = promisify(execFile);
const appRoot = fileURLToPath(new URL('../../', import.meta.url));
const bin = (name: string) => join(appRoot, 'node_modules', '.bin', name);

const lms = createLmsClient({ baseUrl: stack.apiBaseUrl, token: () => token({ roles: ['LMS.Admin'] }) });

describe('the client package (@lms-platform/api-client)', () => {
  it('has the types openapi-typescript generates from the current openapi.json', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'lms-client-'));
    try {
      // With the arguments of `npm run client`, which writes the committed file.
      const { scripts } = JSON.parse(await readFile(join(appRoot, 'package.json'), 'utf8'));
      const args = /openapi-typescript ([^&]+)/.exec(scripts.client)![1]!.trim().split(/\s+/);
      args[args.indexOf('--output') + 1] = join(folder, 'schema.ts');
      await run(bin('openapi-typescript'), args, { cwd: appRoot });
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
    expect(listed).toEqual([{ ...project, etag: created.response.headers.get('etag') }]);

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
    type Listed = components['schemas']['ProjectListItem'];
    expectTypeOf(all).toEqualTypeOf<Listed[]>();
    const listed = made.map((project) => ({ ...project, etag: expect.any(String) }));
    expect(all).toEqual(listed);

    const one: Listed[] = [];
    for await (const project of lms.items('/projects', { params: { query } })) {
      expectTypeOf(project).toEqualTypeOf<Listed>();
      one.push(project);
      if (one.length === 3) break;
    }
    expect(one).toEqual(listed.slice(0, 3));
  });

  it('offers paging for the paths that answer lists, and only those', () => {
    expectTypeOf<ListPath>().toEqualTypeOf<'/projects' | '/tasks' | '/users' | '/rag/jobs' | '/webhooks' | '/webhooks/{webhookId}/deliveries' | '/events'>();
  });

  it('surfaces error answers as the LmsApiError subclass for their status: 404, 412, 400 with its details, 401, 403', async () => {
    const missing = await lms
      .GET('/projects/{projectId}', { params: { path: { projectId: 'PRJ-999999' } } })
      .then(unwrap)
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toBeInstanceOf(LmsApiError);
    expect(missing).toMatchObject({
      name: 'NotFoundError',
      status: 404,
      error: 'Not Found',
      message: 'Project PRJ-999999 does not exist.',
      requestId: expect.any(String),
    });

    const project = unwrap(await lms.POST('/projects', { body: { name: 'Raced', owner: uniqueEmail('client-error') } }));
    const stale = await lms
      .PUT('/projects/{projectId}', { params: { path: { projectId: project.id }, header: { 'If-Match': '"an-earlier-version"' } }, body: { status: 'OnHold' } })
      .then(unwrap)
      .catch((error: unknown) => error);
    expect(stale).toBeInstanceOf(PreconditionFailedError);
    expect(stale).toMatchObject({ name: 'PreconditionFailedError', status: 412, error: 'Precondition Failed' });
    expect((stale as LmsApiError).response.headers.get('x-request-id')).toBe((stale as LmsApiError).requestId);

    const refused = await lms.all('/projects', { params: { query: { limit: 500 } } }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BadRequestError);
    expect(refused).toMatchObject({ status: 400, error: 'Bad Request', details: [{ path: expect.stringContaining('limit') }] });
    // The message names what was refused, so a log of `error.message` alone says it.
    const { body, message } = refused as LmsApiError;
    expect(message).toBe(`${body.message} [${body.details!.map((detail) => `${detail.path}: ${detail.message}`).join('; ')}]`);
    expect(message).toContain('limit');

    const anonymous = await createLmsClient({ baseUrl: stack.apiBaseUrl, token: 'not-a-token' }).GET('/users/me');
    expect(LmsApiError.from(anonymous.error, anonymous.response)).toBeInstanceOf(UnauthorizedError);
    const reader = createLmsClient({ baseUrl: stack.apiBaseUrl, token: () => token({ roles: ['LMS.Reader'] }) });
    const forbidden = await reader.POST('/projects', { body: { name: 'Not mine to make' } });
    expect(LmsApiError.from(forbidden.error, forbidden.response)).toBeInstanceOf(ForbiddenError);
  });

  it('throws ConflictError for a 409 and ThrottledError for a 429 it does not retry', async () => {
    const busy = { error: 'Conflict', message: 'A RAG job is running.', status: 409, activeJobId: 'a-job' };
    const api = await between((index): Step =>
      index === 0
        ? { answer: 409, headers: { 'content-type': 'application/json' }, body: JSON.stringify(busy) }
        : { answer: 429, headers: { 'retry-after': '3600' } },
    );
    const client = createLmsClient({ baseUrl: api.baseUrl, token: 'a-token' });
    const conflict = await client
      .POST('/rag/index', { body: {} })
      .then(unwrap)
      .catch((error: unknown) => error);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict).toMatchObject({ status: 409, body: { activeJobId: 'a-job' } });
    const throttled = await client.all('/projects').catch((error: unknown) => error);
    expect(throttled).toBeInstanceOf(ThrottledError);
    expect((throttled as ThrottledError).response.headers.get('retry-after')).toBe('3600');
  });

  it('starts a RAG rebuild with an empty body, as the document allows (mode is optional)', async () => {
    const api = await between(() => ({ answer: 202, headers: { 'content-type': 'application/json' }, body: '{}' }));
    const started = await createLmsClient({ baseUrl: api.baseUrl, token: 'a-token' }).POST('/rag/index', { body: {} });
    expect(started.response.status).toBe(202);
    expect(api.seen.map((request) => [request.method, request.url, request.body])).toEqual([['POST', '/api/rag/index', '{}']]);
    expect(api.seen[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('waits for a RAG job to end, reading it every intervalMs, and gives up after timeoutMs', async () => {
    const job = (status: RagJob['status']) => ({
      answer: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jobId: 'a-job', status }),
    });
    const api = await between((index) => job(index < 2 ? 'Running' : 'Succeeded'));
    const client = createLmsClient({ baseUrl: api.baseUrl, token: 'a-token' });
    expect(await client.waitForRagJob('a-job', { intervalMs: 10 })).toMatchObject({ jobId: 'a-job', status: 'Succeeded' });
    expect(api.seen.map((request) => request.url)).toEqual(['/api/rag/jobs/a-job', '/api/rag/jobs/a-job', '/api/rag/jobs/a-job']);

    const running = await between(() => job('Running'));
    const waiting = createLmsClient({ baseUrl: running.baseUrl, token: 'a-token' }).waitForRagJob('a-job', { intervalMs: 20, timeoutMs: 200 });
    await expect(waiting).rejects.toMatchObject({ name: 'TimeoutError', message: expect.stringContaining('still Running') });
    expect(running.seen.length).toBeGreaterThan(1);
  });

  it('loads with require() as well as import, on Node 20.19 and later', async () => {
    const script = "const lms = require('@lms-platform/api-client'); console.log(typeof lms.createLmsClient, typeof lms.verifyWebhook)";
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: appRoot });
    expect(stdout.trim()).toBe('function function');
  });
});

const unavailable = { answer: 503, headers: { 'content-type': 'application/json' }, body: '{"error":"Service Unavailable","message":"Busy.","status":503}' };
const admin = () => token({ roles: ['LMS.Admin'] });
const ownedBy = async (owner: string) => (await lms.all('/projects', { params: { query: { owner } } })).map((project) => project.id);

describe('the client package: retries, default headers and webhooks', () => {
  it('knows the creates, which honour Idempotency-Key, from the document', () => {
    expectTypeOf<CreatePath>().toEqualTypeOf<'/projects' | '/tasks' | '/webhooks' | '/rag/index'>();
  });

  it('retries a 503 after the wait its Retry-After asks for, with the Idempotency-Key it made, and creates one project', async () => {
    const { baseUrl, seen } = await between((index) => (index === 0 ? { ...unavailable, headers: { ...unavailable.headers, 'retry-after': '1' } } : 'forward'));
    const owner = uniqueEmail('client-503');
    const created = unwrap(await createLmsClient({ baseUrl, token: admin }).POST('/projects', { body: { name: 'After a 503', owner } }));
    expect(seen).toHaveLength(2);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(seen[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!.headers['idempotency-key']).toBe(seen[0]!.headers['idempotency-key']);
    expect(await ownedBy(owner)).toEqual([created.id]);
  });

  it('sends a create whose answer was lost again with the same key: the API replays it, and one project exists', async () => {
    const { baseUrl, seen } = await between((index) => (index === 0 ? 'drop' : 'forward'));
    const owner = uniqueEmail('client-lost');
    const created = await createLmsClient({ baseUrl, token: admin }).POST('/projects', { body: { name: 'Answer lost once', owner } });
    expect(created.response.headers.get('idempotent-replayed')).toBe('true');
    expect(new Set(seen.map((request) => request.headers['idempotency-key'])).size).toBe(1);
    expect(await ownedBy(owner)).toEqual([unwrap(created).id]);
  });

  it('retries a 429 and a read whose connection was cut, a bounded number of times', async () => {
    const throttled = await between((index) => (index === 0 ? { answer: 429, headers: { 'retry-after': '0' } } : 'forward'));
    expect((await createLmsClient({ baseUrl: throttled.baseUrl, token: admin }).GET('/users/me')).response.status).toBe(200);
    expect(throttled.seen).toHaveLength(2);
    const cut = await between((index) => (index === 0 ? 'cut' : 'forward'));
    expect((await createLmsClient({ baseUrl: cut.baseUrl, token: admin }).GET('/users/me')).response.status).toBe(200);
    expect(cut.seen).toHaveLength(2);

    const down = await between(() => ({ ...unavailable, headers: { ...unavailable.headers, 'retry-after': '0' } }));
    const failed = await createLmsClient({ baseUrl: down.baseUrl, token: admin, maxRetries: 2 }).GET('/users/me');
    expect(() => unwrap(failed)).toThrow(expect.objectContaining({ status: 503, message: 'Busy.' }));
    expect(down.seen).toHaveLength(3);
  });

  it('never retries other errors, a wait longer than maxRetryDelayMs, or a POST without a key whose answer was lost', async () => {
    const broken = await between(() => ({ answer: 500, body: 'Oops' }));
    expect((await createLmsClient({ baseUrl: broken.baseUrl, token: admin }).GET('/users/me')).response.status).toBe(500);
    expect(broken.seen).toHaveLength(1);
    const later = await between(() => ({ answer: 503, headers: { 'retry-after': '120' } }));
    expect((await createLmsClient({ baseUrl: later.baseUrl, token: admin, maxRetryDelayMs: 5_000 }).GET('/users/me')).response.status).toBe(503);
    expect(later.seen).toHaveLength(1);
    const cut = await between(() => 'cut');
    const cancel = createLmsClient({ baseUrl: cut.baseUrl, token: admin }).POST('/rag/jobs/{jobId}/cancel', {
      params: { path: { jobId: '5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b' } },
    });
    await expect(cancel).rejects.toThrow(TypeError);
    expect(cut.seen.map((request) => [request.method, request.headers['idempotency-key']])).toEqual([['POST', undefined]]);
  });

  it('sends its default headers with every request: Accept-Language for messages in Japanese', async () => {
    const japanese = createLmsClient({ baseUrl: stack.apiBaseUrl, token: admin, headers: { 'Accept-Language': 'ja' } });
    const missing = await japanese.GET('/projects/{projectId}', { params: { path: { projectId: 'PRJ-999999' } } });
    expect(missing.error).toMatchObject({ status: 404, message: 'プロジェクト PRJ-999999 は存在しません。' });
  });

  // Deadlines for a loaded machine, where the shared stack's queue may be slow: this is no speed test.
  it('verifies a real delivery with verifyWebhook, refuses a tampered one, and accepts either secret after a rotation', { timeout: 300_000 }, async () => {
    const receiver = await startWebhookReceiver();
    const path = { webhookId: '' };
    try {
      const subscription = unwrap(await lms.POST('/webhooks', { body: { url: receiver.url, events: ['project.created'] } }));
      path.webhookId = subscription.id;
      const project = unwrap(await lms.POST('/projects', { body: { name: 'Verified in TypeScript', owner: uniqueEmail('client-hook') } }));
      const about = (delivery: ReceivedDelivery) => delivery.body.includes(project.id);
      const [delivery] = (await receiver.waitFor((received) => received.some(about), 120_000)).filter(about);
      const headers = new Headers(delivery!.headers as Record<string, string>);
      expect(verifyWebhook(subscription.secret, headers, delivery!.body)).toEqual({ type: 'project.created', timestamp: expect.any(String), data: project });
      expect(() => verifyWebhook(subscription.secret, headers, delivery!.body.replace('Verified in', 'Forged in'))).toThrow(WebhookVerificationError);
      // The raw body as bytes, as a server framework hands it over.
      expect(verifyWebhook(subscription.secret, headers, Buffer.from(delivery!.body)).data).toEqual(project);
      expect(verifyWebhook(subscription.secret, headers, new TextEncoder().encode(delivery!.body).buffer).data).toEqual(project);
      expect(() => verifyWebhook(subscription.secret, headers, Buffer.from(delivery!.body.replace('Verified in', 'Forged in')))).toThrow(
        WebhookVerificationError,
      );

      const rotated = unwrap(await lms.POST('/webhooks/{webhookId}/rotate-secret', { params: { path } }));
      unwrap(await lms.POST('/webhooks/{webhookId}/ping', { params: { path } }));
      const isPing = (received: ReceivedDelivery) => received.body.includes('"webhook.ping"');
      const [ping] = (await receiver.waitFor((received) => received.some(isPing), 120_000)).filter(isPing);
      for (const secret of [subscription.secret, rotated.secret])
        expect(verifyWebhook(secret, ping!.headers as Record<string, string>, ping!.body).type).toBe('webhook.ping');
    } finally {
      if (path.webhookId) await lms.DELETE('/webhooks/{webhookId}', { params: { path } });
      await receiver.close();
    }
  });
});
