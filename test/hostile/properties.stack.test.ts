/**
 * Property-based hostility (fast-check) against every write endpoint: random bodies, headers,
 * queries and ids never give a 5xx, every error is in the contract's shape (checked by send() for
 * every answer), and an answer in the 4xx range never changes what is stored. Each property keeps a
 * model of what the endpoint may legitimately have changed (the ids it created, the last version
 * it returned) and compares the store with it after every request.
 */
import fc from 'fast-check';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { hostileTest, type CaseCounter } from '../support/hostile-cases.js';
import { sharedStackSettings, startOwnHost, stopOwnHosts, type OwnHost } from '../support/own-hosts.js';
import { apiAt, type HostileResponse } from '../support/raw-http.js';
import { logsAreClean } from '../support/secrets-and-logs.js';
import { OTHER_TENANT, token } from '../support/stack.js';

const RUNS = 150;
const unique = () => Math.random().toString(36).slice(2, 10);
/** The caller of the project creates: a create without an owner is theirs, so their list shows every create. */
const CREATOR = `fuzz-creator-${unique()}@contoso.test`;
const RAG_CALLER = `fuzz-rag-${unique()}@contoso.test`;

let host: OwnHost;
let call: ReturnType<typeof apiAt>;

beforeAll(async () => {
  host = await startOwnHost({ ...sharedStackSettings(), AzureFunctionsJobHost__extensions__queues__maxPollingInterval: '00:00:00.2' });
  call = apiAt(host.url);
});

afterAll(stopOwnHosts);

const admin = () => token({ roles: ['LMS.Admin'] });

// ------------------------------------------------------------------ arbitraries

/** Text that breaks rules: control characters, lone surrogates, limits, injection, prototype names. */
const hostileText = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ maxLength: 10 }).map((text) => `${text}\ud800`),
  fc.string({ maxLength: 10 }).map((text) => `\u0000${text}`),
  fc.constantFrom(
    '',
    ' ',
    '\t',
    '\n',
    '😀'.repeat(201),
    'x'.repeat(10_001),
    "' OR 1=1 --",
    '__proto__',
    'constructor',
    'null',
    'Archived',
    '2027-02-30',
    'PRJ-0',
    'TSK-0',
  ),
);

/** Any JSON value, hostile text included. */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileText },
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(hostileText, { maxLength: 3 }),
  fc.dictionary(hostileText, hostileText, { maxKeys: 3 }),
);

/** Mostly valid values of a field, sometimes anything at all: most requests break one thing or none. */
const field = <T>(valid: fc.Arbitrary<T>) => fc.oneof({ weight: 5, arbitrary: valid }, { weight: 1, arbitrary: anyJson });

/** The arbitrary's value now and then, `nil` most of the time. */
const sometimes = <T, N>(arbitrary: fc.Arbitrary<T>, nil: N, weight = 1) => fc.oneof({ weight: 6, arbitrary: fc.constant(nil) }, { weight, arbitrary });

const someEmail = fc.constantFrom('kim@contoso.test', 'Lee@Contoso.Test', 'fuzz-member@contoso.test');
const name = fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom('Fuzzed', '新しい 🚀', ' padded '));

/** Unknown members, prototype names among them. */
const extraMembers = sometimes(
  fc.dictionary(
    fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'tenantId', 'createdBy', '_etag')),
    anyJson,
    { minKeys: 1, maxKeys: 2 },
  ),
  null,
);

interface Attempt {
  body: { kind: 'json'; value: unknown } | { kind: 'text'; value: string } | { kind: 'bytes'; value: Uint8Array } | { kind: 'none' };
  headers: Record<string, string>;
  query: string;
  /** 'CURRENT' stands for the target's current ETag, known only when the attempt runs. */
  ifMatch: string | undefined;
}

/** A body built from the endpoint's fields (plus unknown members), or any JSON, text or bytes at all. */
function bodyOf(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Attempt['body']> {
  const object = fc.tuple(fc.record(fields, { requiredKeys: [] }), extraMembers).map(([known, extra]) => ({ ...(extra ?? {}), ...known }));
  return fc.oneof(
    { weight: 8, arbitrary: object.map((value) => ({ kind: 'json' as const, value })) },
    { weight: 1, arbitrary: anyJson.map((value) => ({ kind: 'json' as const, value })) },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((value) => ({ kind: 'text' as const, value })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((value) => ({ kind: 'bytes' as const, value })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
  );
}

/** Header values Node can send: printable ASCII, tab and Latin-1. */
const headerText = fc.string({
  unit: fc.oneof(
    fc.constantFrom('\t', 'é', 'ÿ'),
    fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 1 }).filter((char) => char >= ' ' && char <= '~'),
  ),
  maxLength: 30,
});

const headers: fc.Arbitrary<Record<string, string>> = fc
  .record(
    {
      'content-type': fc.oneof(
        { weight: 12, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON') },
        fc.constantFrom('text/plain', 'application/json; charset=utf-16', 'application/x-www-form-urlencoded', ''),
        headerText,
      ),
      'idempotency-key': fc.oneof({ weight: 4, arbitrary: fc.constantFrom('fuzz-key-1', 'fuzz-key-2', `fuzz-${unique()}`) }, headerText),
      'accept-language': fc.oneof(fc.constantFrom('ja', 'en', 'ja-JP,ja;q=0.9,en;q=0.5', '*;q=0', 'ja;q=abc'), headerText),
      'if-none-match': fc.constantFrom('*', '"x"', 'W/"x"'),
      'x-http-method-override': fc.constantFrom('DELETE', 'GET'),
    },
    { requiredKeys: ['content-type'] },
  )
  .map((record) => Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Record<string, string>);

const query = sometimes(
  fc
    .array(
      fc.tuple(
        fc.oneof(fc.constantFrom('limit', 'cursor', '__proto__', 'access_token', 'status', 'x'), fc.string({ maxLength: 6 })),
        fc.string({ maxLength: 12 }),
      ),
      { minLength: 1, maxLength: 3 },
    )
    .map((pairs) => `?${new URLSearchParams(pairs).toString()}`),
  '',
);

const ifMatch = sometimes(
  fc.oneof({ weight: 3, arbitrary: fc.constantFrom('CURRENT', '*', '"stale"', 'W/CURRENT', 'CURRENT, "stale"', 'garbage', '""') }, headerText),
  undefined,
  3,
);

function attempts(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Attempt> {
  return fc.record({ body: bodyOf(fields), headers, query, ifMatch });
}

// ------------------------------------------------------------------ running an attempt

async function send(method: string, path: string, attempt: Attempt, bearer: string, currentEtag?: string): Promise<HostileResponse> {
  const headersToSend = { ...attempt.headers };
  if (attempt.ifMatch !== undefined) headersToSend['if-match'] = currentEtag ? attempt.ifMatch.replace('CURRENT', currentEtag) : attempt.ifMatch;
  const { body } = attempt;
  const payload =
    body.kind === 'json'
      ? (JSON.stringify(body.value) ?? 'null')
      : body.kind === 'text'
        ? body.value
        : body.kind === 'bytes'
          ? Buffer.from(body.value)
          : undefined;
  return call(method, `${path}${attempt.query}`, { token: bearer, headers: headersToSend, ...(payload !== undefined ? { body: payload } : {}) });
}

/** The property's common part: never a 5xx (send() has checked the headers and the error shape). */
function expectNoServerError(response: HostileResponse, attempt: Attempt): void {
  expect(response.status, `${response.status} ${response.text.slice(0, 300)} for ${JSON.stringify(attempt).slice(0, 500)}`).toBeLessThan(500);
}

async function property<T>(cases: CaseCounter, arbitrary: fc.Arbitrary<T>, run: (value: T) => Promise<void>, numRuns = RUNS): Promise<void> {
  await fc.assert(
    fc.asyncProperty(arbitrary, async (value) => {
      cases.add();
      await run(value);
    }),
    // A failure is reported as found, unshrunk: shrinking would send hundreds more requests.
    { numRuns, endOnFailure: true },
  );
}

async function listIds(path: string, bearer: string): Promise<string[]> {
  const response = await call('GET', path, { token: bearer });
  expect(response.status, response.text).toBe(200);
  return response.body.map((item: { id?: string; jobId?: string }) => item.id ?? item.jobId).sort();
}

async function readResource(path: string): Promise<{ status: number; etag: unknown; body: any }> {
  const response = await call('GET', path, { token: await admin() });
  return { status: response.status, etag: response.headers.etag, body: response.body };
}

type Stored = Awaited<ReturnType<typeof readResource>>;

/**
 * What a PUT may have done: a 200 on the target stores exactly what it answered, and anything else
 * leaves the target as it was. Returns the target as now stored.
 */
async function expectUpdateAppliedOrNothing(path: string, target: string, id: string, response: HostileResponse, stored: Stored): Promise<Stored> {
  const now = await readResource(`${path}/${target}`);
  if (response.status === 200 && id === target) {
    expect(now.body).toEqual(response.body);
    return now;
  }
  expect(now, `after ${response.status} ${response.text.slice(0, 200)}`).toEqual(stored);
  return stored;
}

async function newProject(body: Record<string, unknown> = {}): Promise<string> {
  const response = await call('POST', '/projects', { token: await admin(), body: { name: 'Fuzz target', owner: `fuzz-${unique()}@contoso.test`, ...body } });
  expect(response.status, response.text).toBe(201);
  return response.body.id;
}

async function newTask(projectId: string): Promise<string> {
  const response = await call('POST', '/tasks', { token: await admin(), body: { projectId, title: 'Fuzz target', description: 'Original' } });
  expect(response.status, response.text).toBe(201);
  return response.body.id;
}

/** A path id: mostly the target, sometimes one that cannot exist. */
const targetOr = (target: () => string) =>
  fc
    .oneof({ weight: 8, arbitrary: fc.constant('TARGET') }, fc.constantFrom('PRJ-999999999', 'TSK-999999999', '..%2Fx', '%00', 'x'.repeat(300)))
    .map((id) => (id === 'TARGET' ? target() : id));

/** A PUT or DELETE of the endpoint's fields: a path id (mostly the target) and an attempt. */
const targetedAttempts = (target: () => string, fields: Record<string, fc.Arbitrary<unknown>>) =>
  fc.tuple(targetOr(target), attempts(fields)).map(([id, attempt]) => ({ id, attempt }));

/** The fields of a task that both its create and its update take. */
const taskFields = {
  title: field(name),
  description: field(fc.string({ maxLength: 60 })),
  status: field(fc.constantFrom('Todo', 'InProgress', 'Blocked', 'Done')),
  priority: field(fc.constantFrom('Low', 'Medium', 'High', 'Urgent')),
  assignee: field(fc.option(someEmail, { nil: null })),
  dueDate: field(fc.option(fc.constantFrom('2027-01-15', '2028-02-29', '2027-02-29'), { nil: null })),
};

// ------------------------------------------------------------------ the properties

describe('random requests to every write endpoint: never a 5xx, errors in the contract shape, a 4xx changes nothing', () => {
  hostileTest(
    `POST /api/projects with ${RUNS} random bodies, headers and queries`,
    async (cases) => {
      const bearer = await token({ roles: ['LMS.Manager'], username: CREATOR });
      const listPath = `/projects?owner=${encodeURIComponent(CREATOR)}&limit=200`;
      const created = new Set(await listIds(listPath, await admin()));
      const arbitrary = attempts({
        name: field(name),
        description: field(fc.string({ maxLength: 60 })),
        // Only the caller as owner, so that the caller's list shows every project these requests could create.
        owner: field(fc.constantFrom(CREATOR, CREATOR.toUpperCase())).filter(
          (owner) => typeof owner !== 'string' || !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(owner) || owner.toLowerCase() === CREATOR,
        ),
        members: field(fc.array(someEmail, { maxLength: 4 })),
      });
      await property(cases, arbitrary, async (attempt) => {
        const response = await send('POST', '/projects', attempt, bearer);
        expectNoServerError(response, attempt);
        if (response.status === 201) {
          expect(response.body).toMatchObject({ id: expect.stringMatching(/^PRJ-\d+$/), status: 'Active', owner: CREATOR });
          created.add(response.body.id);
        }
        expect(await listIds(listPath, await admin()), `after ${response.status}`).toEqual([...created].sort());
      });
    },
    120_000,
  );

  hostileTest(
    `PUT /api/projects/{id} with ${RUNS} random bodies, headers, queries and ids`,
    async (cases) => {
      const bearer = await admin();
      let target = await newProject();
      let stored = await readResource(`/projects/${target}`);
      const arbitrary = targetedAttempts(() => target, {
        name: field(name),
        description: field(fc.string({ maxLength: 60 })),
        owner: field(someEmail),
        members: field(fc.array(someEmail, { maxLength: 4 })),
        status: field(fc.constantFrom('Planning', 'Active', 'OnHold', 'Completed', 'Archived')),
      });
      await property(cases, arbitrary, async ({ id, attempt }) => {
        const response = await send('PUT', `/projects/${id}`, attempt, bearer, stored.etag as string);
        expectNoServerError(response, attempt);
        stored = await expectUpdateAppliedOrNothing('/projects', target, id, response, stored);
        // An Archived target refuses every change: the next runs get a fresh one.
        if (stored.body.status === 'Archived') {
          target = await newProject();
          stored = await readResource(`/projects/${target}`);
        }
      });
    },
    120_000,
  );

  hostileTest(
    `POST /api/tasks with ${RUNS} random bodies, headers and queries`,
    async (cases) => {
      const bearer = await token({ roles: ['LMS.Member'] });
      const project = await newProject();
      const archived = await newProject();
      expect((await call('PUT', `/projects/${archived}`, { token: await admin(), body: { status: 'Archived' } })).status).toBe(200);
      const created = new Set<string>();
      const arbitrary = attempts({
        // Only this test's projects, or ids that cannot exist: a random real id would put tasks into another test's project.
        projectId: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(project, archived, 'PRJ-999999999') },
          anyJson.filter((value) => typeof value !== 'string' || !/^PRJ-\d+$/.test(value)),
        ),
        ...taskFields,
      });
      await property(cases, arbitrary, async (attempt) => {
        const response = await send('POST', '/tasks', attempt, bearer);
        expectNoServerError(response, attempt);
        if (response.status === 201) {
          expect(response.body.projectId).toBe(project);
          created.add(response.body.id);
        }
        expect(await listIds(`/tasks?projectId=${project}&limit=200`, await admin()), `after ${response.status}`).toEqual([...created].sort());
        expect(await listIds(`/tasks?projectId=${archived}`, await admin()), 'tasks of the Archived project').toEqual([]);
      });
    },
    120_000,
  );

  hostileTest(
    `PUT /api/tasks/{id} with ${RUNS} random bodies, headers, queries and ids`,
    async (cases) => {
      const bearer = await token({ roles: ['LMS.Member'] });
      const target = await newTask(await newProject());
      let stored = await readResource(`/tasks/${target}`);
      const arbitrary = targetedAttempts(() => target, { ...taskFields, projectId: fc.constantFrom('PRJ-999999999', 'PRJ-1001') });
      await property(cases, arbitrary, async ({ id, attempt }) => {
        const response = await send('PUT', `/tasks/${id}`, attempt, bearer, stored.etag as string);
        expectNoServerError(response, attempt);
        stored = await expectUpdateAppliedOrNothing('/tasks', target, id, response, stored);
      });
    },
    120_000,
  );

  hostileTest(
    `POST /api/rag/index with ${RUNS} random bodies, headers and queries (in the other tenant)`,
    async (cases) => {
      // The other tenant, whose RAG lock the home tenant's RAG tests never wait for.
      const bearer = await token({ tenant: OTHER_TENANT, roles: ['LMS.Manager'], username: RAG_CALLER });
      const oid = decodeJwt(bearer).oid;
      const jobsOfCaller = async () => {
        const response = await call('GET', '/rag/jobs?limit=200', { token: bearer });
        expect(response.status, response.text).toBe(200);
        return response.body
          .filter((job: { requestedBy: string }) => job.requestedBy === oid)
          .map((job: { jobId: string }) => job.jobId)
          .sort();
      };
      const created = new Set<string>(await jobsOfCaller());
      const arbitrary = attempts({
        mode: field(fc.constantFrom('incremental', 'full')),
        projectIds: field(fc.array(fc.constantFrom('PRJ-999999998', 'PRJ-999999999'), { minLength: 1, maxLength: 3 })),
      });
      await property(cases, arbitrary, async (attempt) => {
        const response = await send('POST', '/rag/index', attempt, bearer);
        expectNoServerError(response, attempt);
        if (response.status === 202) created.add(response.body.jobId);
        if (response.status === 409) expect(response.body.activeJobId).toEqual(expect.any(String));
        expect(await jobsOfCaller(), `after ${response.status}`).toEqual([...created].sort());
      });
    },
    120_000,
  );

  hostileTest(
    'DELETE /api/projects/{id} and /api/tasks/{id} with 60 random headers, queries and ids each',
    async (cases) => {
      const bearer = await admin();
      for (const kind of ['projects', 'tasks'] as const) {
        const fresh = async () => (kind === 'projects' ? newProject() : newTask(await newProject()));
        let target = await fresh();
        let stored = await readResource(`/${kind}/${target}`);
        await property(
          cases,
          targetedAttempts(() => target, {}),
          async ({ id, attempt }) => {
            const response = await send('DELETE', `/${kind}/${id}`, attempt, bearer, stored.etag as string);
            expectNoServerError(response, attempt);
            const now = await readResource(`/${kind}/${target}`);
            if (response.status === 204 && id === target) {
              expect(now.status).toBe(404);
              target = await fresh();
              stored = await readResource(`/${kind}/${target}`);
            } else {
              expect(now, `after ${response.status} ${response.text.slice(0, 200)}`).toEqual(stored);
            }
          },
          60,
        );
      }
    },
    120_000,
  );
});

logsAreClean("the property tests' host log", () => host.lines);
