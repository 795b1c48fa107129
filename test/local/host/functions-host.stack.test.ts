/**
 * The local host's request log: one line per request, with method, path, status, duration and the
 * request id the app answered with, so that the `requestId` of an error leads to its request.
 */
import { describe, expect, it } from 'vitest';
import { sharedHostLog } from '../../support/secrets-and-logs.js';
import { api, stack, token } from '../../support/stack.js';

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe("the local host's request log", () => {
  it('has one line for each request, naming the request id the answer carried, and no query', async () => {
    const denied = await api('GET', '/projects?q=private-search-text', { token: 'not-a-token' });
    const listed = await api('GET', '/projects?limit=1', { token: await token({ roles: ['LMS.Reader'] }) });
    expect([denied.status, listed.status]).toEqual([401, 200]);
    for (const [answer, status] of [
      [denied, 401],
      [listed, 200],
    ] as const) {
      const requestId = answer.headers.get('x-request-id')!;
      expect(requestId).toBeTruthy();
      const line = new RegExp(`^\\[[^\\]]+\\] GET /api/projects ${status} \\d+ ms \\(request ${escaped(requestId)}\\)$`, 'm');
      await expect.poll(sharedHostLog, { timeout: 10_000, interval: 100 }).toMatch(line);
      const requestLines = new RegExp(`^\\[[^\\]]+\\] GET \\S+ \\d+ \\d+ ms \\(request ${escaped(requestId)}\\)$`, 'gm');
      expect((await sharedHostLog()).match(requestLines), 'the request id on one request line').toHaveLength(1);
    }
    expect(await sharedHostLog()).not.toContain('private-search-text');
  });

  it('logs what no function answers too (a method no function lists), without a request id', async () => {
    const path = `/api/unanswered-${Math.random().toString(36).slice(2, 10)}`;
    const response = await fetch(new URL(path, stack.apiBaseUrl), { method: 'PROPFIND' });
    expect(response.status).toBe(404);
    await expect
      .poll(sharedHostLog, { timeout: 10_000, interval: 100 })
      .toMatch(new RegExp(`^\\[[^\\]]+\\] PROPFIND ${path} 404 \\d+ ms \\(request -\\)$`, 'm'));
  });
});
