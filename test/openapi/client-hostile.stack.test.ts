/**
 * The client package (client/) against answers meant to steer it: a `Link` or a redirect to another
 * origin, a `Link` it has followed already, a server that never answers, a 503 after the API may
 * have acted. A second host records whatever reaches it: the token must never.
 */
import { createLmsClient, LmsApiError, UnsafeLinkError, type RetryEvent } from '@lms-platform/api-client';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { anotherHost, between, page, type Step } from './client-servers.js';

const TOKEN = 'the-token-of-this-test';
const client = (baseUrl: string, options: Partial<Parameters<typeof createLmsClient>[0]> = {}) => createLmsClient({ baseUrl, token: TOKEN, ...options });
const ended = {
  answer: 500,
  headers: { 'content-type': 'application/json' },
  body: '{"error":"Internal Server Error","message":"Paged too far.","status":500}',
};
const JOB = '5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b';

describe('the client package sends its token to the base URL’s origin alone', () => {
  it.each([
    ['an absolute Link to another host', (other: string) => `http://${other}/api/projects?cursor=next`],
    ['a scheme-relative Link to another host', (other: string) => `//${other}/api/projects?cursor=next`],
    ['a Link to the same host and port in another scheme', (_other: string, own: string) => `https://${own}/api/projects?cursor=next`],
  ])('refuses %s, and never sends the next page there', async (_case, link) => {
    const other = await anotherHost();
    const api = await between(() => page([{ id: 'PRJ-1' }], link(other.host, new URL(api.origin).host)));
    const paging = client(api.baseUrl).all('/projects');
    await expect(paging).rejects.toBeInstanceOf(UnsafeLinkError);
    await expect(paging).rejects.toThrow(/another origin/);
    expect(api.seen).toHaveLength(1);
    expect(other.seen).toEqual([]);
  });

  it.each([
    ['to the page itself', () => '/api/projects', 1],
    ['to the page itself, absolute', (origin: string) => `${origin}/api/projects`, 1],
    ['back to the first page from the second', (_origin: string, index: number) => (index === 0 ? 'projects?cursor=2' : '/api/projects'), 2],
  ])('ends paging with an error on a Link it has followed already: %s', async (_case, link, pagesRead) => {
    const api = await between((index) => (index > 5 ? ended : page([{ id: `PRJ-${index}` }], link(api.origin, index))));
    const read: string[] = [];
    const paging = (async () => {
      for await (const project of client(api.baseUrl).items('/projects')) read.push(project.id);
    })();
    await expect(paging).rejects.toThrow(UnsafeLinkError);
    await expect(paging).rejects.toThrow(/already/);
    expect(api.seen).toHaveLength(pagesRead);
    expect(read).toEqual(Array.from({ length: pagesRead - 1 }, (_, index) => `PRJ-${index}`));
  });

  it('follows a relative Link, resolved against the URL of the page that gave it', async () => {
    const links = ['projects?cursor=2', '/api/projects?cursor=3', undefined];
    const api = await between((index) => (index > 2 ? ended : page([{ id: `PRJ-${index}` }], links[index])));
    expect((await client(api.baseUrl).all('/projects')).map((project) => project.id)).toEqual(['PRJ-0', 'PRJ-1', 'PRJ-2']);
    expect(api.seen.map((request) => [request.url, request.headers.authorization])).toEqual([
      ['/api/projects', `Bearer ${TOKEN}`],
      ['/api/projects?cursor=2', `Bearer ${TOKEN}`],
      ['/api/projects?cursor=3', `Bearer ${TOKEN}`],
    ]);
  });

  it('follows no redirect: a 307 on a create sends neither the body nor the token elsewhere', async () => {
    const other = await anotherHost();
    const api = await between(() => ({ answer: 307, headers: { location: `${other.origin}/api/projects` } }));
    const created = await client(api.baseUrl).POST('/projects', { body: { name: 'Redirected' } });
    expect(created.response.status).toBe(307);
    expect(created.error).toBeDefined();
    expect(api.seen).toHaveLength(1);
    expect(other.seen).toEqual([]);
  });

  it.each([
    [308, 'POST', 'another host'],
    [302, 'GET', 'the same origin'],
  ])('follows no redirect: a %i on a %s to %s is handed back as an error', async (status, method, where) => {
    const other = await anotherHost();
    const api = await between(() => ({ answer: status, headers: { location: where === 'another host' ? `${other.origin}/api/x` : '/api/elsewhere' } }));
    const lms = client(api.baseUrl);
    const answer =
      method === 'POST' ? await lms.POST('/webhooks/{webhookId}/rotate-secret', { params: { path: { webhookId: 'whk-1' } } }) : await lms.GET('/users/me');
    expect(answer.response.status).toBe(status);
    const error = LmsApiError.from(answer.error, answer.response);
    expect(error).toMatchObject({ status });
    expect(error.message).toMatch(/redirect/);
    expect(api.seen).toHaveLength(1);
    expect(other.seen).toEqual([]);
  });

  it('refuses a call whose own baseUrl names another origin', async () => {
    const other = await anotherHost();
    const api = await between(() => 'hang');
    await expect(client(api.baseUrl).GET('/users/me', { baseUrl: `${other.origin}/api` })).rejects.toThrow(/origin/);
    expect(other.seen).toEqual([]);
    expect(api.seen).toEqual([]);
  });
});

describe('the client package bounds its waits and repeats only what was not done', () => {
  it('gives up on a server that never answers after timeoutMs, and does not send a POST again', async () => {
    const api = await between(() => 'hang');
    const rotation = client(api.baseUrl, { timeoutMs: 300 }).POST('/webhooks/{webhookId}/rotate-secret', { params: { path: { webhookId: 'whk-1' } } });
    await expect(rotation).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(api.seen).toHaveLength(1);
  });

  it('gives up after timeoutMs even when garbage is collected while it waits (undici drops signals nothing holds)', async () => {
    setFlagsFromString('--expose-gc');
    const collectGarbage = runInNewContext('gc') as () => void;
    const api = await between(() => 'hang');
    const collecting = setInterval(collectGarbage, 50);
    try {
      const rotation = client(api.baseUrl, { timeoutMs: 1_000 }).POST('/webhooks/{webhookId}/rotate-secret', { params: { path: { webhookId: 'whk-1' } } });
      await expect(rotation).rejects.toMatchObject({ name: 'TimeoutError' });
    } finally {
      clearInterval(collecting);
    }
    expect(api.seen).toHaveLength(1);
  });

  it('sends a read again after its timeout, a bounded number of times', async () => {
    const api = await between(() => 'hang');
    await expect(client(api.baseUrl, { timeoutMs: 200, maxRetries: 1 }).GET('/users/me')).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(api.seen).toHaveLength(2);
  });

  it('has a timeout by default: a hung server does not hold a call forever', { timeout: 90_000 }, async () => {
    const api = await between(() => 'hang');
    const rotation = client(api.baseUrl).POST('/webhooks/{webhookId}/rotate-secret', { params: { path: { webhookId: 'whk-1' } } });
    await expect(rotation).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(api.seen).toHaveLength(1);
  });

  it.each([
    ['/webhooks/{webhookId}/rotate-secret', { webhookId: 'whk-1' }],
    ['/webhooks/{webhookId}/ping', { webhookId: 'whk-1' }],
    ['/webhooks/{webhookId}/deliveries/{deliveryId}/retry', { webhookId: 'whk-1', deliveryId: 'dlv-1' }],
    ['/rag/jobs/{jobId}/cancel', { jobId: JOB }],
  ] as const)('does not retry a 503 on POST %s, which the API may have acted on', async (path, parameters) => {
    const api = await between(() => ({
      answer: 503,
      headers: { 'retry-after': '0', 'content-type': 'application/json' },
      body: '{"error":"Service Unavailable","message":"Busy.","status":503}',
    }));
    const post = client(api.baseUrl).POST as (path: string, init: object) => Promise<{ response: Response }>;
    expect((await post(path, { params: { path: parameters } })).response.status).toBe(503);
    expect(api.seen).toHaveLength(1);
  });

  it('retries a 429 on any POST (the API did not act on it), and tells its onRetry hook', async () => {
    const api = await between((index): Step =>
      index === 0 ? { answer: 429, headers: { 'retry-after': '0' } } : { answer: 200, headers: { 'content-type': 'application/json' }, body: '{}' },
    );
    const retries: RetryEvent[] = [];
    const lms = client(api.baseUrl, { onRetry: (retry) => retries.push(retry) });
    const rotated = await lms.POST('/webhooks/{webhookId}/rotate-secret', { params: { path: { webhookId: 'whk-1' } } });
    expect(rotated.response.status).toBe(200);
    expect(api.seen).toHaveLength(2);
    expect(retries).toEqual([{ method: 'POST', url: `${api.baseUrl}/webhooks/whk-1/rotate-secret`, retry: 1, delayMs: 0, status: 429 }]);
  });
});
