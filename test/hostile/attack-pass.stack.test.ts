/**
 * What an attack pass against `npm start` found, one test per finding, against a host of this file's
 * own (its log is read) that uses the shared identity provider and database.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startCosmosProxy, type CosmosProxy } from '../support/cosmos-proxy.js';
import { hostileTest } from '../support/hostile-cases.js';
import { sharedStackSettings, startOwnHost, stopOwnHosts, type OwnHost } from '../support/own-hosts.js';
import { abandonBody, apiAt, expectClientError, inBatches, nextCursor } from '../support/raw-http.js';
import { logsAreClean } from '../support/secrets-and-logs.js';
import { HOME_TENANT, signToken, token, uniqueEmail, userClaims } from '../support/stack.js';

let host: OwnHost;
let call: ReturnType<typeof apiAt>;
let admin: string;

beforeAll(async () => {
  host = await startOwnHost(sharedStackSettings());
  call = apiAt(host.url);
  admin = await token({ roles: ['LMS.Admin'] });
});
afterAll(stopOwnHosts);

/** What a cursor holds: its continuation, deflated in it. */
function continuationOf(cursor: string): string {
  const { c, r } = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { c?: string; r?: string };
  return r ?? inflateRawSync(Buffer.from(c!, 'base64url')).toString();
}

/**
 * A cursor as an attacker rebuilds one, in each of the server's forms (the continuation as it is, and
 * deflated): the continuation of their choice, the digest of the query's scope (an unkeyed hash of
 * what they know), and a MAC with a key of their own.
 */
function forgedCursors(scope: string, continuation: string): string[] {
  const s = createHash('sha256').update(scope).digest('base64url').slice(0, 22);
  const key = randomBytes(32);
  const signed = (body: { c: string } | { r: string }, packed: string) => ({
    v: 3,
    ...body,
    s,
    m: createHmac('sha256', key).update(`${s}\n${packed}`).digest('base64url'),
  });
  const c = deflateRawSync(continuation).toString('base64url');
  return [signed({ c }, c), signed({ r: continuation }, `raw:${continuation}`)].map((body) => Buffer.from(JSON.stringify(body)).toString('base64url'));
}

describe('paging cursors cannot be forged', () => {
  hostileTest('an edited or made-up list cursor, signed with a key of its own, is a 400', async (cases) => {
    const owner = uniqueEmail('cursor');
    for (const name of ['One', 'Two', 'Three']) expect((await call('POST', '/projects', { token: admin, body: { name, owner } })).status).toBe(201);
    const first = await call('GET', `/projects?owner=${encodeURIComponent(owner)}&limit=1`, { token: admin });
    const cursor = nextCursor(first);
    const scope = JSON.stringify([
      HOME_TENANT,
      'project',
      'c.createdAt DESC',
      [
        { name: '@tenantId', value: HOME_TENANT },
        { name: '@type', value: 'project' },
        { name: '@owner', value: owner },
      ],
    ]);
    const continuation = continuationOf(cursor);
    expect(continuation).toMatch(/"token":"[^"]*"/);
    const madeUp = continuation.replace(/"token":"[^"]*"/, '"token":"+RID:~AAAAAAAAAAA="');
    for (const forged of [...forgedCursors(scope, madeUp), ...forgedCursors(scope, 'garbage')]) {
      cases.add();
      const answer = await call('GET', `/projects?owner=${encodeURIComponent(owner)}&limit=1&cursor=${forged}`, { token: admin });
      expectClientError(answer, 400, host.explain(answer));
    }
  });

  hostileTest('a directory cursor rebuilt to ask Graph for 999 users, or for a bad query, is a 400, never a 500', async (cases) => {
    const reader = await token({ roles: ['LMS.Reader'] });
    const first = await call('GET', '/users?source=directory&limit=5', { token: reader });
    expect(first.status, host.explain(first)).toBe(200);
    const cursor = nextCursor(first);
    const nextLink = new URL(continuationOf(cursor));
    const scope = JSON.stringify(['directory-users', HOME_TENANT, undefined]);
    for (const [name, value] of [
      ['$top', '999'],
      ['$top', 'abc'],
      ['$filter', 'bogus((('],
      ['$select', 'passwordProfile'],
    ] as const) {
      cases.add();
      const edited = new URL(nextLink);
      edited.searchParams.set(name, value);
      for (const forged of forgedCursors(scope, edited.href)) {
        const answer = await call('GET', `/users?source=directory&limit=5&cursor=${forged}`, { token: reader });
        expectClientError(answer, 400, `${name}=${value}: ${host.explain(answer)}`);
      }
    }
  });
});

describe('contention is not an outage', () => {
  hostileTest('200 parallel PUTs to one project without If-Match: none is a 5xx, and none is logged as an outage', async (cases) => {
    const created = await call('POST', '/projects', { token: admin, body: { name: 'Contended', owner: uniqueEmail('contended') } });
    const id = created.body.id as string;
    const answers = await inBatches(
      Array.from({ length: 200 }, (_, index) => index),
      200,
      (index) => call('PUT', `/projects/${id}`, { token: admin, body: { description: `writer ${index}` } }),
    );
    cases.add(200);
    for (const answer of answers) {
      if (answer.status === 200) continue;
      // Contention that cannot be absorbed says so, and when to come back.
      expectClientError(answer, 409, host.explain(answer));
      expect(answer.headers['retry-after']).toMatch(/^\d+$/);
    }
    const final = await call('GET', `/projects/${id}`, { token: admin });
    expect(answers.filter((answer) => answer.status === 200).map((answer) => answer.body.description)).toContain(final.body.description);
    expect(host.lines.filter((line) => /unavailable|outage/i.test(line))).toEqual([]);
  });
});

describe('the server log', () => {
  let cosmos: CosmosProxy;
  let failing: OwnHost;
  beforeAll(async () => {
    cosmos = await startCosmosProxy();
    failing = await startOwnHost({ ...sharedStackSettings(), COSMOS_CONNECTION: cosmos.connectionString });
  });
  afterAll(() => cosmos.close());

  hostileTest('holds no stack frame for a 5xx: the error, its message and the request id', async (cases) => {
    cosmos.intercept = (record) =>
      record.method === 'GET' && record.path.includes('/docs/PRJ-') ? { status: 500, body: { code: 'InternalServerError', message: 'boom' } } : undefined;
    const answer = await apiAt(failing.url)('GET', '/projects/PRJ-424242', { token: admin });
    cases.add();
    expect(answer.status).toBeGreaterThanOrEqual(500);
    const requestId = answer.body.requestId as string;
    const logged = failing.lines.filter((line) => line.includes(requestId));
    expect(logged.length, failing.lines.join('\n')).toBeGreaterThan(0);
    for (const line of logged) {
      expect(line).not.toMatch(/\bat [\w$.<>]+ \(|\.[cm]?js:\d+|node_modules|node:internal/);
    }
  });
});

describe('tokens', () => {
  hostileTest('a token issued a day in the future is a 401', async (cases) => {
    const now = Math.floor(Date.now() / 1000);
    const future = await signToken(userClaims({ iat: now + 86_400, nbf: now - 60, exp: now + 86_400 + 3600 }));
    cases.add();
    const answer = await call('GET', '/projects?limit=1', { token: future });
    expectClientError(answer, 401, host.explain(answer));
  });

  hostileTest('an e-mail from the token that a body could not give does not become an owner: the owner must be given', async (cases) => {
    const dotted = await signToken(userClaims({ upn: 'İnfo@contoso.test', oid: crypto.randomUUID() }));
    cases.add(2);
    const answer = await call('POST', '/projects', { token: dotted, body: { name: 'Dotted owner' } });
    expectClientError(answer, 400, host.explain(answer));
    expect(answer.body.message).toMatch(/owner/i);
    expect((await call('POST', '/projects', { token: dotted, body: { name: 'Dotted owner', owner: 'info@contoso.test' } })).status).toBe(201);
  });
});

describe('names', () => {
  hostileTest('are stored NFC-normalised, so café in either form finds both', async (cases) => {
    const owner = uniqueEmail('cafe');
    const composed = 'Caf\u00e9 crème';
    const decomposed = 'Cafe\u0301 cre\u0300me';
    const a = await call('POST', '/projects', { token: admin, body: { name: composed, owner } });
    const b = await call('POST', '/projects', { token: admin, body: { name: decomposed, owner } });
    expect([a.body.name, b.body.name]).toEqual([composed, composed]);
    for (const q of ['caf\u00e9', 'cafe\u0301']) {
      cases.add();
      const found = await call('GET', `/projects?owner=${encodeURIComponent(owner)}&q=${encodeURIComponent(q)}`, { token: admin });
      expect(found.body.map((project: { id: string }) => project.id).sort()).toEqual([a.body.id, b.body.id].sort());
    }
  });

  hostileTest('made only of invisible characters, or holding bidirectional controls, are a 400', async (cases) => {
    const owner = uniqueEmail('invisible');
    const project = await call('POST', '/projects', { token: admin, body: { name: 'Visible', owner } });
    for (const name of ['\u200b', '\u200b\u200c\u2060', '\u00ad', 'evil\u202egnp.exe', 'a\u2066b\u2069', '\u202a']) {
      cases.add(3);
      expectClientError(await call('POST', '/projects', { token: admin, body: { name, owner } }), 400, JSON.stringify(name));
      expectClientError(await call('PUT', `/projects/${project.body.id}`, { token: admin, body: { name } }), 400, JSON.stringify(name));
      expectClientError(await call('POST', '/tasks', { token: admin, body: { projectId: project.body.id, title: name } }), 400, JSON.stringify(name));
    }
  });
});

describe('smaller things', () => {
  hostileTest('a create at /api//projects or /api/projects/ answers the canonical Location', async (cases) => {
    for (const path of ['//projects', '/projects/']) {
      cases.add();
      const answer = await call('POST', path, { token: admin, body: { name: 'Double slash', owner: uniqueEmail('slash') } });
      expect(answer.status, path).toBe(201);
      expect(answer.headers.location, path).toBe(`/api/projects/${answer.body.id}`);
    }
  });

  hostileTest('a caller without a role is refused before being recorded as a user', async (cases) => {
    const username = `no-role-${crypto.randomUUID().slice(0, 8)}@contoso.test`;
    cases.add();
    expectClientError(await call('GET', '/projects', { token: await token({ username, roles: [] }) }), 403);
    const listed = await call('GET', `/users?q=${encodeURIComponent(username.split('@')[0]!)}`, { token: admin });
    expect(listed.body).toEqual([]);
  });

  hostileTest('a client that goes away mid-body is not logged as a database outage', async (cases) => {
    const before = host.lines.length;
    const body = JSON.stringify({ name: 'Gone', description: 'x'.repeat(200_000) });
    cases.add();
    await abandonBody(host.url, 'POST', '/projects', { token: admin, part: body.slice(0, 100_000), declaredLength: Buffer.byteLength(body) });
    // The host's line for the request, once it has given up on it.
    await expect.poll(() => host.lines.slice(before).some((line) => line.includes('POST /api/projects closed by the client')), { timeout: 10_000 }).toBe(true);
    expect(host.lines.slice(before).filter((line) => /database|outage|unavailable/i.test(line))).toEqual([]);
  });
});

logsAreClean("this file's host log", () => host.lines);
