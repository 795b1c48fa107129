/**
 * The local host hands a function the request as Azure's Functions host does: the query as a record
 * whose repeated keys are merged (without case) and joined by ",", repeated headers joined by ",",
 * and a body sent without Content-Length empty; a Host header that names no host it refuses. An app
 * of one function that echoes what it received runs in the local host, and raw node:http requests
 * control the repetitions and the chunking.
 */
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHostProcess } from '../../../local/stack.js';

const projectRoot = fileURLToPath(new URL('../../../', import.meta.url));

const ECHO_APP = `
const { app } = require('@azure/functions');
app.http('echo', {
  route: 'echo',
  methods: ['GET', 'POST'],
  handler: async (request) => {
    const body = request.method === 'GET' ? '' : await request.text();
    return { jsonBody: { url: request.url, query: Object.fromEntries(request.query), headers: Object.fromEntries(request.headers), body } };
  },
});
`;

interface Echoed {
  url: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: string;
}

let appFolder: string;
let host: Awaited<ReturnType<typeof startHostProcess>>;

beforeAll(async () => {
  appFolder = await mkdtemp(join(tmpdir(), 'echo-app-'));
  await writeFile(join(appFolder, 'package.json'), JSON.stringify({ main: 'echo.cjs' }));
  await writeFile(join(appFolder, 'host.json'), JSON.stringify({ version: '2.0' }));
  await writeFile(join(appFolder, 'echo.cjs'), ECHO_APP);
  // The app's dependencies, as a deployed app carries them.
  await symlink(join(projectRoot, 'node_modules'), join(appFolder, 'node_modules'));
  host = await startHostProcess({ port: 0, environment: {}, appRoot: appFolder });
});
afterAll(async () => {
  await host?.stop();
  await rm(appFolder, { recursive: true, force: true });
});

/** What the function received; `body` is written in one piece with Content-Length, `chunks` one by one without it. */
function echo(method: string, path: string, options: { headers?: OutgoingHttpHeaders; body?: string; chunks?: string[] } = {}): Promise<Echoed> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port: host.port, method, path: `/api/echo${path}`, headers: options.headers }, (response) => {
      const parts: Buffer[] = [];
      response.on('data', (part: Buffer) => parts.push(part));
      response.on('end', () => resolve(JSON.parse(Buffer.concat(parts).toString('utf8')) as Echoed));
    });
    request.on('error', reject);
    for (const chunk of options.chunks ?? []) request.write(chunk);
    request.end(options.body);
  });
}

/** The status of a request with these headers, without reading what it says. */
function statusOf(headers: OutgoingHttpHeaders): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port: host.port, path: '/api/echo', headers }, (response) => {
      response.resume().on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject).end();
  });
}

describe("the local host's request conversion, as Azure's host does it", () => {
  it('merges query keys without case, first spelling kept, joining non-empty values by ","; the URL keeps the raw query string', async () => {
    const raw = '?status=Active&STATUS=OnHold&q=&q=x&blank=&blank=&list=a%2Cb&plus=a+b';
    const received = await echo('GET', raw);
    expect(received.query).toEqual({ status: 'Active,OnHold', q: 'x', blank: '', list: 'a,b', plus: 'a b' });
    expect(new URL(received.url).search).toBe(raw);
  });

  it('joins a repeated header\'s non-empty values by "," without a space, under its lower-case name', async () => {
    const received = await echo('GET', '', { headers: { 'X-Repeated': ['a', '', 'b'], 'x-single': 'c, d' } });
    expect(received.headers).toMatchObject({ 'x-repeated': 'a,b', 'x-single': 'c, d' });
  });

  it('refuses a Host header that names no host with a 400, as Kestrel does, and goes on serving', async () => {
    expect(await statusOf({ host: 'a b' })).toBe(400);
    expect(await statusOf({ host: 'localhost' })).toBe(200);
  });

  it('hands over a body with Content-Length whole, small or large, and one sent chunked empty', async () => {
    expect((await echo('POST', '', { body: '{"name":"Ada"}' })).body).toBe('{"name":"Ada"}');
    const large = 'a'.repeat(200 * 1024);
    expect((await echo('POST', '', { body: large })).body).toBe(large);
    const chunked = await echo('POST', '', { chunks: ['{"name":', '"Ada"}'] });
    expect(chunked.headers['transfer-encoding']).toBe('chunked');
    expect(chunked.body).toBe('');
  });
});
