/** GET /api/events as a receiver that was down uses it: oldest first, from a time, a page at a time (docs/webhooks.md). */
import { describe, expect, it } from 'vitest';
import { api, nextPath, token, uniqueEmail, type ApiResponse } from '../support/stack.js';

type Listed = { id: string; type: string; timestamp: string; data: { id: string; owner?: string } };

describe('catching up with GET /api/events', () => {
  it('reads the events oldest first from a time, following Link to the end; a cursor goes on only in its own order', async () => {
    const admin = await token({ roles: ['LMS.Admin'] });
    const reader = await token({ roles: ['LMS.Reader'] });
    const owner = uniqueEmail('catch-up');
    // The recipe's point in time: a minute before the last event the receiver saw.
    const since = new Date(Date.now() - 60_000).toISOString();
    const created: string[] = [];
    for (const name of ['First', 'Second', 'Third']) {
      const answer = await api<{ id: string }>('POST', '/projects', { token: admin, body: { name, owner } });
      expect(answer.status).toBe(201);
      created.push(answer.body.id);
    }

    const caughtUp: Listed[] = [];
    let path: string | undefined = `/events?type=project.created&sort=timestamp&since=${encodeURIComponent(since)}&limit=2`;
    let firstPage: ApiResponse<Listed[]> | undefined;
    while (path) {
      const page: ApiResponse<Listed[]> = await api('GET', path, { token: reader });
      expect(page.status).toBe(200);
      firstPage ??= page;
      caughtUp.push(...page.body);
      path = nextPath(page.headers.get('link'));
    }
    const timestamps = caughtUp.map((event) => event.timestamp);
    expect(timestamps).toEqual([...timestamps].sort());
    expect(caughtUp.filter((event) => event.data.owner === owner).map((event) => event.data.id)).toEqual(created);

    // The next page of the oldest-first list is no page of the newest-first one.
    const next = nextPath(firstPage!.headers.get('link'))!;
    const otherOrder = await api('GET', next.replace('sort=timestamp', 'sort=-timestamp'), { token: reader });
    expect(otherOrder.status).toBe(400);
    expect(otherOrder.body).toMatchObject({ message: expect.stringContaining('different query') });
    expect((await api('GET', '/events?sort=type', { token: reader })).status).toBe(400);
  });
});
