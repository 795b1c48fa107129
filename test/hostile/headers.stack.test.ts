/**
 * Headers a caller chose, against the shared stack. A `Host` (or a request target) naming another
 * host: no URL the API hands back (`Link`, `Location`, the reference page's links) may name it, since
 * a client that follows it would send its token there; every header and body of every answer is looked
 * at, not only the headers that hold URLs today. A header sent twice that the API takes once: Azure's
 * host joins the values with a comma, and the joined value must not pass as one.
 */
import { describe, expect } from 'vitest';
import { hostileTest } from '../support/hostile-cases.js';
import { send, type HostileResponse, type SendOptions } from '../support/raw-http.js';
import { logsAreClean } from '../support/secrets-and-logs.js';
import { stack, token, uniqueEmail } from '../support/stack.js';
import { waitFor } from '../support/wait.js';

const EVIL = 'evil.example';
const apiOrigin = new URL(stack.apiBaseUrl).origin;

/** The ways a request can name a host other than the API's: the Host header, forwarding headers, an absolute-form target. */
const steered: { label: string; call: (method: string, path: string, options?: SendOptions) => Promise<HostileResponse> }[] = [
  {
    label: `Host: ${EVIL}`,
    call: (method, path, options = {}) => send(stack.apiBaseUrl, method, path, { ...options, headers: { ...options.headers, host: EVIL } }),
  },
  {
    label: `X-Forwarded-Host: ${EVIL}`,
    call: (method, path, options = {}) =>
      send(stack.apiBaseUrl, method, path, {
        ...options,
        headers: { ...options.headers, 'x-forwarded-host': EVIL, 'x-forwarded-proto': 'https', forwarded: `host=${EVIL}` },
      }),
  },
  {
    label: `the absolute-form target http://${EVIL}/api/…`,
    call: (method, path, options = {}) => send(apiOrigin, method, `http://${EVIL}/api${path}`, { ...options, headers: { ...options.headers, host: EVIL } }),
  },
];

function expectNoHostNamed(answer: HostileResponse, where: string): void {
  expect(JSON.stringify(answer.headers), `the headers of ${where}`).not.toContain(EVIL);
  expect(answer.text, `the body of ${where}`).not.toContain(EVIL);
}

describe('URLs the API hands back are never built from what the caller controls', () => {
  for (const { label, call } of steered) {
    hostileTest(`${label}: Link, Location and the reference page name no other host`, async (cases) => {
      const admin = await token({ roles: ['LMS.Admin'] });
      const owner = uniqueEmail('host-header');
      for (const name of ['First', 'Second']) {
        const created = await call('POST', '/projects', { token: admin, body: { name, owner } });
        cases.add();
        expect(created.status, created.text).toBe(201);
        expectNoHostNamed(created, `POST /projects with ${label}`);
        expect(created.headers.location).toBe(`/api/projects/${created.body.id}`);
      }

      const page = await call('GET', `/projects?owner=${encodeURIComponent(owner)}&limit=1`, { token: admin });
      cases.add();
      expect(page.status, page.text).toBe(200);
      expectNoHostNamed(page, `a page with ${label}`);
      expect(page.headers.link).toMatch(/^<\/api\/projects\?owner=[^>]*&limit=1&cursor=[\w-]+>; rel="next"$/);

      const documentation = await call('GET', '/docs');
      cases.add();
      expect(documentation.status).toBe(200);
      expectNoHostNamed(documentation, `the reference page with ${label}`);

      const missing = await call('GET', '/nothing-here', { token: admin });
      cases.add();
      expectNoHostNamed(missing, `an unknown route with ${label}`);
    });
  }

  hostileTest(
    "a RAG job's Location names no other host",
    async (cases) => {
      const manager = await token({ roles: ['LMS.Manager'] });
      const { call } = steered[0]!;
      // One job per tenant at a time: a job another test started is waited out.
      const started = await waitFor(async () => {
        const answer = await call('POST', '/rag/index', { token: manager, body: { mode: 'incremental' } });
        return answer.status === 409 ? undefined : answer;
      }, 60_000);
      cases.add();
      expect(started.status, started.text).toBe(202);
      expectNoHostNamed(started, 'POST /rag/index');
      expect(started.headers.location).toBe(`/api/rag/jobs/${started.body.jobId}`);
    },
    90_000,
  );
});

describe('a header the API takes once, sent twice', () => {
  hostileTest('two Idempotency-Key headers are a 400 that creates nothing, whether the keys are the same or not', async (cases) => {
    const admin = await token({ roles: ['LMS.Admin'] });
    const owner = uniqueEmail('two-keys');
    for (const keys of [
      ['same-key', 'same-key'],
      [`first-${owner}`, `second-${owner}`],
    ]) {
      cases.add();
      const answer = await send(stack.apiBaseUrl, 'POST', '/projects', { token: admin, body: { name: 'Twice', owner }, headers: { 'idempotency-key': keys } });
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body.message).toContain('Idempotency-Key');
    }
    const listed = await send(stack.apiBaseUrl, 'GET', `/projects?owner=${encodeURIComponent(owner)}`, { token: admin });
    expect(listed.body).toEqual([]);
  });

  hostileTest('two Content-Type headers are no JSON type: a 415, even when both say application/json', async (cases) => {
    const admin = await token({ roles: ['LMS.Admin'] });
    cases.add();
    const answer = await send(stack.apiBaseUrl, 'POST', '/projects', {
      token: admin,
      body: JSON.stringify({ name: 'Typed twice', owner: uniqueEmail('two-types') }),
      headers: { 'content-type': ['application/json', 'application/json'] },
    });
    expect(answer.status, answer.text).toBe(415);
  });

  hostileTest('two If-Match headers are one list of tags, as RFC 9110 reads a repeated list header', async (cases) => {
    const admin = await token({ roles: ['LMS.Admin'] });
    const created = await send(stack.apiBaseUrl, 'POST', '/projects', { token: admin, body: { name: 'Listed twice', owner: uniqueEmail('two-tags') } });
    const current = created.headers.etag as string;
    cases.add();
    const changed = await send(stack.apiBaseUrl, 'PUT', `/projects/${created.body.id}`, {
      token: admin,
      body: { description: 'Matched' },
      headers: { 'if-match': ['"an-old-version"', current] },
    });
    expect(changed.status, changed.text).toBe(200);
  });
});

logsAreClean('no log of its own', () => []);
