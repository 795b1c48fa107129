import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { api, stack, token, uniqueEmail } from '../support/stack.js';

const admin = () => token({ roles: ['LMS.Admin'] });

function expectErrorShape(body: unknown, status: number, error: string): void {
  expect(body).toMatchObject({ error, status, message: expect.any(String), requestId: expect.any(String) });
}

describe('request bodies', () => {
  it('refuses a body without Content-Type: application/json with 415', async () => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1']) {
      const response = await api('POST', '/projects', { token: await admin(), body: '{"name":"x"}', headers: { 'content-type': contentType } });
      expect(response.status, contentType).toBe(415);
      expectErrorShape(response.body, 415, 'Unsupported Media Type');
    }
  });

  it('accepts application/json with a utf-8 charset', async () => {
    const response = await api('POST', '/projects', {
      token: await admin(),
      body: JSON.stringify({ name: 'Charset', owner: uniqueEmail() }),
      headers: { 'content-type': 'application/json; charset=UTF-8' },
    });
    expect(response.status).toBe(201);
  });

  it.each([
    ['invalid JSON', '{"name":'],
    ['an empty body', ''],
    ['a JSON array', '[{"name":"x"}]'],
    ['a JSON string', '"name"'],
    ['a JSON number', '42'],
    ['null', 'null'],
    ['nesting 10,000 deep', `${'['.repeat(10_000)}${']'.repeat(10_000)}`],
  ])('refuses %s with 400', async (_, body) => {
    const response = await api('POST', '/projects', { token: await admin(), body, headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(400);
    expectErrorShape(response.body, 400, 'Bad Request');
  });

  it('refuses a body over 1 MiB with 413, from Content-Length', async () => {
    const big = JSON.stringify({ name: 'x', description: 'a'.repeat(2 * 1024 * 1024) });
    const declared = await api('POST', '/projects', { token: await admin(), body: big });
    expect(declared.status).toBe(413);
    expectErrorShape(declared.body, 413, 'Payload Too Large');
  });

  it("refuses a body sent chunked, which Azure's host hands over empty, with 411 asking for Content-Length", async () => {
    // A valid body, in two chunks.
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const part of ['{"name":', '"Chunked"}']) controller.enqueue(new TextEncoder().encode(part));
        controller.close();
      },
    });
    const response = await fetch(`${stack.apiBaseUrl}/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await admin()}`, 'content-type': 'application/json' },
      body: chunked,
      duplex: 'half',
    });
    expect(response.status).toBe(411);
    const answer = (await response.json()) as { message: string };
    expectErrorShape(answer, 411, 'Length Required');
    expect(answer.message).toMatch(/Content-Length/);
  });

  it('treats __proto__ and constructor keys as unknown fields, without polluting anything', async () => {
    const response = await api('POST', '/projects', {
      token: await admin(),
      body: '{"name":"Proto","__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}',
    });
    expect(response.status).toBe(400);
    expect(response.body.details.map((detail: { path: string }) => detail.path).sort()).toEqual(['__proto__', 'constructor']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses NUL bytes and lone surrogates in text', async () => {
    for (const name of ['bad\u0000name', 'lone \ud800 surrogate']) {
      const response = await api('POST', '/projects', { token: await admin(), body: { name, owner: uniqueEmail() } });
      expect(response.status).toBe(400);
      expect(response.body.details[0].path).toBe('name');
    }
  });

  it('refuses invalid UTF-8 with 400', async () => {
    const response = await fetch(`${stack.apiBaseUrl}/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await admin()}`, 'content-type': 'application/json' },
      body: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain('UTF-8');
  });
});

describe('what an invalid query value is told, in words and never as a regular expression', () => {
  const detailsOf = async (path: string, language = 'en') =>
    (await api('GET', path, { token: await admin(), headers: { 'Accept-Language': language } })).body.details as { path: string; message: string }[];

  it.each(['abc', '0', '201', '1.5', '1e2'])('limit=%s: a whole number from 1 to 200, in English and in Japanese', async (limit) => {
    expect(await detailsOf(`/projects?limit=${limit}`)).toEqual([{ path: 'query.limit', message: 'Must be a whole number from 1 to 200.' }]);
    expect(await detailsOf(`/projects?limit=${limit}`, 'ja')).toEqual([{ path: 'query.limit', message: '1 から 200 までの整数である必要があります。' }]);
  });

  it('an id, a calendar date, a time and a cursor: each says the form it takes', async () => {
    expect(await detailsOf('/tasks?projectId=42')).toEqual([{ path: 'query.projectId', message: 'Must be an id such as PRJ-1001.' }]);
    expect(await detailsOf('/tasks?projectId=42', 'ja')).toEqual([{ path: 'query.projectId', message: 'PRJ-1001 のような形式の ID である必要があります。' }]);
    expect(await detailsOf('/tasks?dueBefore=2026-02-30')).toEqual([
      { path: 'query.dueBefore', message: 'Must be a date that exists, written YYYY-MM-DD (such as 2027-01-15).' },
    ]);
    expect(await detailsOf('/events?since=yesterday')).toEqual([
      { path: 'query.since', message: 'Must be a date and time in ISO 8601 with a time zone (such as 2026-11-21T09:30:00Z).' },
    ]);
    expect(await detailsOf('/projects?cursor=a.b', 'ja')).toEqual([
      { path: 'query.cursor', message: 'カーソルが正しくありません。最初のページからやり直してください。' },
    ]);
  });

  it('a time or a date beyond what sorts as text: after the year 9999 or before 0000, in UTC, it is refused, not read as every event', async () => {
    const outOfRange = 'Must be a time from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, once turned into UTC.';
    for (const since of ['9999-12-31T23:00:00-05:00', '0000-01-01T00:00:00+01:00']) {
      expect(await detailsOf(`/events?since=${encodeURIComponent(since)}`), since).toEqual([{ path: 'query.since', message: outOfRange }]);
    }
    expect(await detailsOf(`/events?since=${encodeURIComponent('9999-12-31T23:00:00-05:00')}`, 'ja')).toEqual([
      { path: 'query.since', message: '0000-01-01T00:00:00Z から 9999-12-31T23:59:59.999Z まで（UTC に換算して）の日時である必要があります。' },
    ]);
    // The last time there is: nothing is that late.
    const latest = await api('GET', `/events?since=${encodeURIComponent('9999-12-31T23:59:59.999+00:00')}`, { token: await admin() });
    expect(latest.status).toBe(200);
    expect(latest.body).toEqual([]);
    expect((await api('GET', '/events?since=0000-01-01T00:00:00Z&limit=1', { token: await admin() })).status).toBe(200);
    for (const dueBefore of ['10000-01-01', '+010000-01-01', '-000001-01-01']) {
      expect(await detailsOf(`/tasks?dueBefore=${encodeURIComponent(dueBefore)}`), dueBefore).toEqual([
        { path: 'query.dueBefore', message: 'Must be a date that exists, written YYYY-MM-DD (such as 2027-01-15).' },
      ]);
    }
  });

  it('a body field of the same kinds: the project id of a task, its due date', async () => {
    const response = await api('POST', '/tasks', { token: await admin(), body: { projectId: 'project one', title: 'Due', dueDate: '2027-13-01' } });
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([
      { path: 'projectId', message: 'Must be an id such as PRJ-1001.' },
      { path: 'dueDate', message: 'Must be a date that exists, written YYYY-MM-DD (such as 2027-01-15).' },
    ]);
    expect(JSON.stringify(response.body)).not.toMatch(/pattern|\^|\$\//);
  });
});

describe('errors in Japanese', () => {
  it('words validation errors and their details in Japanese when Accept-Language prefers ja', async () => {
    const english = await api('POST', '/projects', { token: await admin(), body: { name: '' } });
    const japanese = await api('POST', '/projects', { token: await admin(), body: { name: '' }, headers: { 'Accept-Language': 'ja-JP,ja;q=0.9,en;q=0.5' } });
    expect(japanese.status).toBe(400);
    expect(japanese.body.error).toBe('Bad Request');
    expect(japanese.body.message).not.toBe(english.body.message);
    expect(japanese.body.message).toMatch(/[\u3040-\u30ff\u4e00-\u9fff]/);
    expect(japanese.body.details[0].message).toMatch(/[\u3040-\u30ff\u4e00-\u9fff]/);
    expect(japanese.headers.get('content-language')).toBe('ja');
  });

  it('words not-found in Japanese', async () => {
    const response = await api('GET', '/projects/PRJ-1', { token: await admin(), headers: { 'Accept-Language': 'ja' } });
    expect(response.status).toBe(404);
    expect(response.body.message).toContain('プロジェクト');
  });
});

describe('unknown routes and methods', () => {
  it.each([
    ['GET', '/nothing-here'],
    ['GET', '/projects/PRJ-1001/nothing'],
    // The API's root, with and without the slash: Azure's catch-all `{*path}` matches an empty rest too.
    ['GET', ''],
    ['POST', '/'],
  ])('%s /api%s is a 404 in the contract shape', async (method, path) => {
    const response = await api(method, path);
    expect(response.status).toBe(404);
    expectErrorShape(response.body, 404, 'Not Found');
    expect(response.headers.get('cache-control')).toBe('no-store');
  });

  it.each([
    ['PATCH', '/projects/PRJ-1001', 'GET, PUT, DELETE'],
    ['POST', '/projects/PRJ-1001', 'GET, PUT, DELETE'],
    ['DELETE', '/projects', 'GET, POST'],
    ['HEAD', '/projects', 'GET, POST'],
    ['PUT', '/rag/index', 'POST'],
    ['patch', '/PROJECTS/prj-1001/', 'GET, PUT, DELETE'],
  ])('%s /api%s, a path the API has, is a 405 whose Allow lists the methods it takes', async (method, path, allowed) => {
    const response = await api(method.toUpperCase(), path);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe(allowed);
    if (method !== 'HEAD') {
      expectErrorShape(response.body, 405, 'Method Not Allowed');
      expect(response.body.message).toContain(allowed);
    }
  });

  it.each(['/projects', '/projects/PRJ-1001', '/', '/apiary', '/openapi.json'])(
    'GET %s, outside /api, is a 404 saying that the API lives under /api',
    async (path) => {
      const response = await fetch(`${new URL(stack.apiBaseUrl).origin}${path}`);
      expect(response.status).toBe(404);
      const body = (await response.json()) as { message: string };
      expectErrorShape(body, 404, 'Not Found');
      expect(body.message).toBe(`No operation matches GET ${path}: the API's paths begin with /api, as in /api/projects, and its reference page is /api/docs.`);
      expect(response.headers.get('cache-control')).toBe('no-store');
    },
  );

  it.each(['/admin/host/status', '/runtime/webhooks/eventgrid', '/Admin'])(
    "answers %s, a route the Functions host keeps for itself, with the host's empty 404, never the app's",
    async (path) => {
      const response = await fetch(`${new URL(stack.apiBaseUrl).origin}${path}`);
      expect(response.status).toBe(404);
      expect(await response.text()).toBe('');
    },
  );

  it("answers a method no function lists with the host's empty 404, CONNECT too (a plain Node server drops it unanswered)", async () => {
    for (const method of ['TRACE', 'PROPFIND', 'CONNECT']) {
      const socket = connect(Number(new URL(stack.apiBaseUrl).port), '127.0.0.1').setEncoding('utf8');
      socket.write(`${method} /api/projects HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      let answer = '';
      for await (const chunk of socket) answer += chunk;
      expect(answer, method).toMatch(/^HTTP\/1\.1 404 Not Found\r\n(?:[^\r\n]+\r\n)*\r\n(?:0\r\n\r\n)?$/);
    }
  });
});
