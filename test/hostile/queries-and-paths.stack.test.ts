/**
 * Hostile query strings and ids against every list endpoint and every `{id}` route: each is a 4xx in
 * the contract's shape or a page whose every item matches the filter, never a 500, and never another
 * tenant's data. The host of this file reaches the database through a recording proxy, so that
 * "an id that cannot be an id costs no database call" can be checked too. test/api/projects.stack.test.ts,
 * tasks.stack.test.ts and users.stack.test.ts cover a few of these cases; this file takes each to every endpoint.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDirectoryUsers, startGraphStandIn, type GraphStandIn } from '../../local/graph/stand-in.js';
import { startCosmosProxy, type CosmosProxy } from '../support/cosmos-proxy.js';
import { hostileTest, type CaseCounter } from '../support/hostile-cases.js';
import { sharedStackSettings, startOwnHost, stopOwnHosts, type OwnHost } from '../support/own-hosts.js';
import { apiAt, expectClientError, nextCursor, type HostileResponse } from '../support/raw-http.js';
import { logsAreClean } from '../support/secrets-and-logs.js';
import { HOME_TENANT, OTHER_TENANT, stack, token } from '../support/stack.js';

const unique = () => Math.random().toString(36).slice(2, 10);
/** Everything the other tenant holds carries this, so that any home response showing it is a leak. */
const MARKER = `othertenantmarker${unique()}`;
const HOME_OWNER = `queries-${unique()}@contoso.test`;

const homeAdmin = () => token({ roles: ['LMS.Admin'] });
const otherAdmin = () => token({ tenant: OTHER_TENANT, roles: ['LMS.Admin'], username: `${MARKER}@contoso.test` });

let cosmos: CosmosProxy;
let graph: GraphStandIn;
let host: OwnHost;
let call: ReturnType<typeof apiAt>;
const home = { projects: [] as string[], tasks: [] as string[] };
const other = { project: '', task: '', jobs: [] as string[] };

async function created(response: HostileResponse): Promise<string> {
  expect(response.status, response.text).toBe(201);
  return response.body.id;
}

/** Starts a RAG job and waits for it to end; a job the other tests left running is waited for first. */
async function finishedJob(bearer: string, projectId: string): Promise<string> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const started = await call('POST', '/rag/index', { token: bearer, body: { projectIds: [projectId] } });
    const jobId = started.status === 202 ? started.body.jobId : started.body.activeJobId;
    expect([202, 409], started.text).toContain(started.status);
    for (;;) {
      const job = await call('GET', `/rag/jobs/${jobId}`, { token: bearer });
      if (job.body.status === 'Succeeded' || job.body.status === 'Failed') break;
      if (Date.now() > deadline) throw new Error(`RAG job ${jobId} did not finish`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    if (started.status === 202) return jobId;
  }
}

beforeAll(async () => {
  cosmos = await startCosmosProxy();
  graph = await startGraphStandIn({
    identityProvider: stack,
    users: { [HOME_TENANT]: generateDirectoryUsers(HOME_TENANT, 5), [OTHER_TENANT]: generateDirectoryUsers(OTHER_TENANT, 5) },
  });
  host = await startOwnHost({
    ...sharedStackSettings(),
    COSMOS_CONNECTION: cosmos.connectionString,
    GRAPH_BASE_URL: graph.baseUrl,
    AzureFunctionsJobHost__extensions__queues__maxPollingInterval: '00:00:00.2',
  });
  call = apiAt(host.url);
  // Enough recorded users in each tenant for a second page at limit=1.
  for (const username of [`${MARKER}-a@contoso.test`, `${MARKER}-b@contoso.test`])
    await call('GET', '/users/me', { token: await token({ tenant: OTHER_TENANT, roles: ['LMS.Reader'], username }) });
  for (const username of [`queries-a-${unique()}@contoso.test`, `queries-b-${unique()}@contoso.test`])
    await call('GET', '/users/me', { token: await token({ roles: ['LMS.Reader'], username }) });
  for (let index = 0; index < 3; index++) {
    home.projects.push(
      await created(await call('POST', '/projects', { token: await homeAdmin(), body: { name: `Queries home ${index}`, owner: HOME_OWNER } })),
    );
  }
  for (let index = 0; index < 3; index++) {
    home.tasks.push(
      await created(
        await call('POST', '/tasks', {
          token: await homeAdmin(),
          body: { projectId: home.projects[0], title: `Queries task ${index}`, assignee: HOME_OWNER, dueDate: '2027-01-10' },
        }),
      ),
    );
  }
  other.project = await created(
    await call('POST', '/projects', { token: await otherAdmin(), body: { name: `${MARKER} project`, description: MARKER, owner: HOME_OWNER } }),
  );
  other.task = await created(
    await call('POST', '/tasks', { token: await otherAdmin(), body: { projectId: other.project, title: `${MARKER} task`, assignee: HOME_OWNER } }),
  );
  const otherManager = await token({ tenant: OTHER_TENANT, roles: ['LMS.Manager'], username: `${MARKER}-manager@contoso.test` });
  // Jobs of the other tenant only: a job of the home tenant would hold the lock that test/api/rag.stack.test.ts counts on.
  other.jobs.push(await finishedJob(otherManager, other.project), await finishedJob(otherManager, other.project));
}, 90_000);

afterAll(async () => {
  await stopOwnHosts();
  await Promise.all([cosmos?.close(), graph?.close()]);
});

// ------------------------------------------------------------------ the list endpoints and what their filters mean

type Item = Record<string, any>;
const lower = (value: string) => value.trim().toLowerCase();

interface ListEndpoint {
  label: string;
  path: string;
  /** Parameters this list always has (source=directory). */
  fixed: string;
  bearer: () => Promise<string>;
  /** Each filter, and whether an item matches the value given. */
  filters: Record<string, (item: Item, value: string) => boolean>;
  sorts: string[];
  /** A query with more than one page at limit=1, in the tenant `pagedIn`. */
  paged: () => string;
  pagedIn: string;
  /** The same query with other filters or another sort: a cursor of `paged` does not belong to them. */
  otherFilters: () => string[];
}

const LISTS: ListEndpoint[] = [
  {
    label: 'GET /api/projects',
    path: '/projects',
    fixed: '',
    bearer: homeAdmin,
    filters: {
      status: (item, value) => item.status === value,
      owner: (item, value) => item.owner === lower(value),
      member: (item, value) => item.members.includes(lower(value)),
      q: (item, value) => item.name.toLowerCase().includes(lower(value)),
    },
    sorts: ['name', '-createdAt'],
    paged: () => `owner=${encodeURIComponent(HOME_OWNER)}&limit=1`,
    pagedIn: HOME_TENANT,
    otherFilters: () => ['limit=1', `owner=${encodeURIComponent(HOME_OWNER)}&sort=name&limit=1`, `owner=${encodeURIComponent(HOME_OWNER)}&q=queries&limit=1`],
  },
  {
    label: 'GET /api/tasks',
    path: '/tasks',
    fixed: '',
    bearer: homeAdmin,
    filters: {
      projectId: (item, value) => item.projectId === value,
      status: (item, value) => item.status === value,
      assignee: (item, value) => item.assignee === lower(value),
      dueBefore: (item, value) => item.dueDate !== null && item.dueDate < value,
    },
    sorts: ['priority', '-dueDate'],
    paged: () => `projectId=${home.projects[0]}&limit=1`,
    pagedIn: HOME_TENANT,
    otherFilters: () => ['limit=1', `projectId=${home.projects[0]}&sort=priority&limit=1`, `projectId=${home.projects[0]}&status=Todo&limit=1`],
  },
  {
    label: 'GET /api/users',
    path: '/users',
    fixed: '',
    bearer: homeAdmin,
    filters: {
      q: (item, value) => [item.displayName, item.email].some((text) => typeof text === 'string' && text.toLowerCase().startsWith(lower(value))),
      role: (item, value) => item.roles.includes(value),
    },
    sorts: [],
    paged: () => 'limit=1',
    pagedIn: HOME_TENANT,
    otherFilters: () => ['q=q&limit=1', 'role=LMS.Reader&limit=1'],
  },
  {
    label: 'GET /api/users?source=directory',
    path: '/users',
    fixed: 'source=directory',
    bearer: homeAdmin,
    filters: {
      q: (item, value) => [item.displayName, item.email].some((text) => typeof text === 'string' && text.toLowerCase().startsWith(lower(value))),
    },
    sorts: [],
    paged: () => 'limit=1',
    pagedIn: HOME_TENANT,
    otherFilters: () => ['q=user&limit=1'],
  },
  {
    label: 'GET /api/rag/jobs',
    path: '/rag/jobs',
    fixed: '',
    bearer: homeAdmin,
    filters: {},
    sorts: [],
    // The home tenant's RAG jobs belong to test/api/rag.stack.test.ts; this file's jobs are the other tenant's.
    paged: () => 'limit=1',
    pagedIn: OTHER_TENANT,
    otherFilters: () => [],
  },
];

function url(list: ListEndpoint, query: string): string {
  const parts = [list.fixed, query].filter(Boolean).join('&');
  return `${list.path}${parts ? `?${parts}` : ''}`;
}

/** A 400 in the contract's shape, or a page of this tenant's items that all match the filters given. */
function expectRefusedOrFiltered(list: ListEndpoint, query: string, response: HostileResponse): void {
  const context = `${list.label} ?${query.slice(0, 100)}`;
  expect(response.text.includes(MARKER), `${context} shows the other tenant's data`).toBe(false);
  for (const jobId of other.jobs) expect(response.text.includes(jobId), `${context} shows the other tenant's job`).toBe(false);
  if (response.status === 200) {
    expect(Array.isArray(response.body), context).toBe(true);
    for (const [name, value] of new URLSearchParams(query)) {
      const matches = list.filters[name];
      if (!matches) continue;
      for (const item of response.body) expect(matches(item, value), `${context}: ${JSON.stringify(item).slice(0, 200)}`).toBe(true);
    }
    return;
  }
  expectClientError(response, 400, context);
}

/** One query the list must refuse with a 400, sent with `bearer`; `context` names the case. */
async function expectRefused(cases: CaseCounter, list: ListEndpoint, query: string, bearer: string, context: string): Promise<void> {
  expectClientError(await call('GET', url(list, query), { token: bearer }), 400, context);
  cases.add();
}

async function tryQueries(
  list: ListEndpoint,
  cases: CaseCounter,
  queries: string[],
  expectation: 'refused' | 'refused-or-filtered' = 'refused',
): Promise<void> {
  const bearer = await list.bearer();
  for (const query of queries) {
    const response = await call('GET', url(list, query), { token: bearer });
    if (expectation === 'refused') expectClientError(response, 400, `${list.label} ?${query.slice(0, 100)}`);
    else expectRefusedOrFiltered(list, query, response);
    cases.add();
  }
}

const INJECTIONS = [
  "'",
  '"',
  "' OR 1=1 --",
  '" OR ""="',
  "') OR ('1'='1",
  "x' OR c.tenantId != '' OR 'x'='x",
  '1; SELECT * FROM c',
  '\\',
  '%',
  '_',
  '*',
  '$ne',
  '{"$gt":""}',
  "o'brien@contoso.test",
  "startswith(displayName,'a') or 1 eq 1",
  '😀',
  '\u0000',
  'a\u202eb',
];

/** An administrator of the tenant: every list is theirs to read. */
const adminOf = (tenant: string) => (tenant === HOME_TENANT ? homeAdmin() : token({ tenant: OTHER_TENANT, roles: ['LMS.Admin'] }));
const otherTenantThan = (tenant: string) => (tenant === HOME_TENANT ? OTHER_TENANT : HOME_TENANT);

/** A real cursor of the list's paged query, in the tenant that has the pages. */
async function realCursor(list: ListEndpoint): Promise<string> {
  return nextCursor(await call('GET', url(list, list.paged()), { token: await adminOf(list.pagedIn) }));
}

// ------------------------------------------------------------------ the tests

for (const list of LISTS) {
  describe(`hostile queries to ${list.label}: a 400 in the contract shape or a matching page, never a 500 or another tenant's data`, () => {
    // Queries the list refuses with a 400: a test a row.
    const refusedQueries: [name: string, queries: string[]][] = [
      [
        'limit of -1, 0, 201, 1e9, abc, empty, padded, decimal, hexadecimal, full-width or repeated (400)',
        [
          'limit=-1',
          'limit=0',
          'limit=201',
          'limit=1e9',
          'limit=abc',
          'limit=',
          'limit',
          'limit=%205',
          'limit=5.0',
          'limit=0x10',
          'limit=%EF%BC%95',
          `limit=${'9'.repeat(30)}`,
          'limit=5&limit=6',
        ],
      ],
      [
        'unknown, repeated and prototype-named parameters, and unknown sorts (400)',
        [
          'stauts=Active',
          'Limit=5',
          'page=2',
          'sort=owner',
          'sort=',
          'sort=name%3BDROP',
          'sort=createdAt,name',
          'sort=__proto__',
          'status[]=Active',
          'status[$ne]=x',
          'constructor=x',
          'toString=x',
          'hasOwnProperty=x',
          'access_token2=x',
          ...(list.sorts.length ? [`sort=${list.sorts[0]}&sort=${list.sorts[1]}`] : []),
        ],
      ],
      ['an unknown parameter named __proto__ is refused like any other (400)', ['__proto__=x', '__proto__[status]=Archived', '__proto__=x&__proto__=y']],
    ];
    for (const [name, queries] of refusedQueries) hostileTest(name, (cases) => tryQueries(list, cases, queries));

    hostileTest('a garbage, empty, oversized, forged or edited cursor (400)', async (cases) => {
      const forged = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
      await tryQueries(list, cases, [
        'cursor=bm90LWEtY3Vyc29y',
        'cursor=',
        `cursor=${'A'.repeat(5000)}`,
        'cursor=%00',
        'cursor=..%2F..%2F',
        `cursor=${forged('null')}`,
        `cursor=${forged('[]')}`,
        `cursor=${forged({ v: 1 })}`,
        `cursor=${forged({ v: 1, c: 'x', f: 'x' })}`,
        `cursor=${forged({ v: 2, c: 'x', f: 'x' })}`,
        `cursor=${forged('{"__proto__":{"v":1},"c":"x","f":"x"}')}`,
        `cursor=${forged({ v: 1, c: 'https://evil.example/v1.0/users?x', f: 'x' })}`,
        'cursor=a&cursor=b',
      ]);
      // A real cursor with one character changed, at the start, in the middle and at the end.
      const real = await realCursor(list);
      const bearer = await adminOf(list.pagedIn);
      for (const position of [0, Math.floor(real.length / 2), real.length - 1]) {
        const edited = `${real.slice(0, position)}${real[position] === 'A' ? 'B' : 'A'}${real.slice(position + 1)}`;
        await expectRefused(cases, list, `${list.paged()}&cursor=${edited}`, bearer, `${list.label}: a cursor edited at ${position}`);
      }
      // The same bytes spelled otherwise: one character appended (base64 decoding may ignore it), padding, a line break.
      for (const respelled of [`${real}A`, `${real}Q`, `${real}=`, `${real}%0A`]) {
        await expectRefused(cases, list, `${list.paged()}&cursor=${respelled}`, bearer, `${list.label}: the cursor ${respelled}`);
      }
    });

    hostileTest('a cursor used with other filters, with another list, or by another tenant (400)', async (cases) => {
      const cursor = await realCursor(list);
      const owner = await adminOf(list.pagedIn);
      for (const query of list.otherFilters()) {
        await expectRefused(cases, list, `${query}&cursor=${cursor}`, owner, `${list.label} ?${query} with the cursor of ?${list.paged()}`);
      }
      for (const otherList of LISTS.filter((candidate) => candidate !== list && candidate.pagedIn === list.pagedIn)) {
        await expectRefused(cases, otherList, `${otherList.paged()}&cursor=${cursor}`, owner, `${otherList.label} with a cursor of ${list.label}`);
      }
      const stranger = await adminOf(otherTenantThan(list.pagedIn));
      await expectRefused(cases, list, `${list.paged()}&cursor=${cursor}`, stranger, `${list.label}: the cursor in another tenant's hands`);
    });

    const filterNames = Object.keys(list.filters);
    if (filterNames.length) {
      hostileTest(`quotes, SQL and OData in every filter (${filterNames.join(', ')}): refused or matching, never another tenant's`, async (cases) => {
        await tryQueries(
          list,
          cases,
          filterNames.flatMap((name) => INJECTIONS.map((value) => `${name}=${encodeURIComponent(value)}`)),
          'refused-or-filtered',
        );
      });

      hostileTest('a 10 KB value in every filter (400)', async (cases) => {
        await tryQueries(
          list,
          cases,
          filterNames.map((name) => `${name}=${'q'.repeat(10 * 1024)}`),
        );
      });
    }
  });
}

// ------------------------------------------------------------------ the {id} routes

interface IdRoute {
  /** The route under /api, `{id}` where the id goes. */
  label: string;
  methods: ('GET' | 'PUT' | 'DELETE')[];
  body: Record<string, unknown>;
  bearer: () => Promise<string>;
  /** The same kind of resource in the other tenant, which the home tenant must not reach. */
  otherTenantsId: () => string;
}

const ID_ROUTES: IdRoute[] = [
  { label: 'projects/{id}', methods: ['GET', 'PUT', 'DELETE'], body: { name: 'Hijacked' }, bearer: homeAdmin, otherTenantsId: () => other.project },
  { label: 'tasks/{id}', methods: ['GET', 'PUT', 'DELETE'], body: { title: 'Hijacked' }, bearer: homeAdmin, otherTenantsId: () => other.task },
  { label: 'rag/jobs/{id}', methods: ['GET'], body: {}, bearer: homeAdmin, otherTenantsId: () => other.jobs[0]! },
];

/** The route's path with the id in it (as given: encoded already where it needs to be). */
const pathOf = (route: IdRoute, id: string) => `/${route.label.replace('{id}', () => id)}`;

/** A caller of the tenant who may read the route's resources. */
function ownerOf(route: IdRoute, tenant: string): Promise<string> {
  return token({
    tenant,
    roles: [route.label === 'rag/jobs/{id}' ? 'LMS.Manager' : 'LMS.Admin'],
    ...(tenant === OTHER_TENANT ? { username: `${MARKER}@contoso.test` } : {}),
  });
}

// Never matches: a PUT or DELETE that did reach a resource of the caller's own tenant with the same
// number (sequences are per tenant) answers 412 and changes nothing, in this test or any other.
const NEVER_MATCHES = { 'If-Match': '"hostile-never-matches"' };

/**
 * The owner's resource at `id`, asked for by a caller of another tenant: a 404, or (when the
 * caller's tenant has its own resource with that number) that one, never the owner's. PUT and
 * DELETE carry an If-Match that never matches, so nothing changes whatever they reach; the owner's
 * resource is the same afterwards.
 */
async function expectCrossTenantMiss(cases: CaseCounter, route: IdRoute, id: string, bearers: { caller: string; owner: string }): Promise<void> {
  const owned = await call('GET', pathOf(route, id), { token: bearers.owner });
  expect(owned.status, owned.text).toBe(200);
  const seen = await call('GET', pathOf(route, id), { token: bearers.caller });
  cases.add();
  const callerHasOne = seen.status === 200;
  if (callerHasOne) {
    expect(route.label, 'a GUID job id of one tenant cannot exist in another').not.toBe('rag/jobs/{id}');
    expect(seen.body.createdAt, `${route.label} ${id}: the caller was shown the other tenant's resource`).not.toBe(owned.body.createdAt);
    expect(seen.text.includes(MARKER)).toBe(false);
  } else {
    expectClientError(seen, 404, `GET ${route.label} ${id} across tenants`);
  }
  for (const method of route.methods.filter((name) => name !== 'GET')) {
    const response = await call(method, pathOf(route, id), {
      token: bearers.caller,
      headers: NEVER_MATCHES,
      ...(method === 'PUT' ? { body: route.body } : {}),
    });
    expectClientError(response, callerHasOne ? 412 : 404, `${method} ${route.label} ${id} across tenants`);
    cases.add();
  }
  const after = await call('GET', pathOf(route, id), { token: bearers.owner });
  expect(after.body).toEqual(owned.body);
  expect(after.headers.etag).toBe(owned.headers.etag);
}

/** Ids that cannot be ids, as they appear in the path (already percent-encoded where needed). */
const MALFORMED_IDS: [string, string][] = [
  ['../ (encoded)', '..%2F..%2Fetc%2Fpasswd'],
  ['../ (double-encoded)', '%252e%252e%252f'],
  ['%00', '%00'],
  ['an id followed by %00', 'PRJ-1001%00'],
  ['an emoji', '%F0%9F%98%80'],
  ['5,000 characters', 'x'.repeat(5000)],
  ['5,000 digits', `PRJ-${'9'.repeat(5000)}`],
  ['a zero sequence number', 'PRJ-0'],
  ['a leading zero', 'PRJ-01001'],
  ['lower case', 'prj-1001'],
  ['a leading space', '%20PRJ-1001'],
  ['a trailing space', 'PRJ-1001%20'],
  ['Arabic-Indic digits', 'PRJ-%D9%A1%D9%A0%D9%A0%D9%A1'],
  ['SQL', "PRJ-1001'%20OR%201=1--"],
  ['a percent sign', '%25'],
  ['an undecodable percent escape', '%E0%A4%A'],
  ['the id of an internal sequence document', 'sequence-projects'],
  ['the id of the RAG lock document', 'rag-active-job'],
  ['the id of an idempotency record', 'idempotency-abc'],
  ['a user object id', '0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b4c'],
  ['a GUID in upper case', '0B9A4C1E-7F3D-4E2A-9C5B-6D8E1F2A3B4C'],
];

/** Whether an id has the form of the route's ids, so that a database read is allowed. */
function lookslikeAnId(route: IdRoute, raw: string): boolean {
  const decoded = (() => {
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw;
    }
  })();
  if (route.label === 'projects/{id}') return /^PRJ-[1-9]\d{0,14}$/.test(decoded);
  if (route.label === 'tasks/{id}') return /^TSK-[1-9]\d{0,14}$/.test(decoded);
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(decoded);
}

for (const route of ID_ROUTES) {
  describe(`hostile ids on ${route.label}: a 404 in the contract shape`, () => {
    hostileTest(
      `ids with ../, %00, emoji, 5,000 characters and internal document ids, on ${route.methods.join(', ')}, without a database call`,
      async (cases) => {
        const bearer = await route.bearer();
        // The caller is recorded by now, so a request that reads nothing writes nothing either.
        await call('GET', '/users/me', { token: bearer });
        for (const [label, id] of MALFORMED_IDS) {
          for (const method of route.methods) {
            const before = cosmos.requests.length;
            const response = await call(method, pathOf(route, id), { token: bearer, ...(method === 'PUT' ? { body: route.body } : {}) });
            expectClientError(response, 404, `${method} ${route.label} with ${label}`);
            if (!lookslikeAnId(route, id)) expect(cosmos.requests.slice(before), `database calls for ${method} ${label}`).toEqual([]);
            cases.add();
          }
        }
      },
    );

    hostileTest("another tenant's id, on every method, reaches nothing of the other tenant", async (cases) => {
      await expectCrossTenantMiss(cases, route, route.otherTenantsId(), { caller: await route.bearer(), owner: await ownerOf(route, OTHER_TENANT) });
    });

    if (route.label !== 'rag/jobs/{id}') {
      hostileTest("the home tenant's id in the other tenant's hands reaches nothing of the home tenant", async (cases) => {
        const id = route.label === 'projects/{id}' ? home.projects[2]! : home.tasks[2]!;
        await expectCrossTenantMiss(cases, route, id, { caller: await ownerOf(route, OTHER_TENANT), owner: await ownerOf(route, HOME_TENANT) });
      });
    }
  });
}

describe('hostile paths and methods', () => {
  hostileTest('encoded dot segments, unknown routes and sub-resources are the catch-all 404 in the contract shape', async (cases) => {
    const bearer = await homeAdmin();
    // Dot segments are resolved (as every HTTP stack does) but never lead out of /api.
    for (const path of [
      '/projects/x/../../nothing',
      '/users/0b9a4c1e-7f3d-4e2a-9c5b-6d8e1f2a3b4c',
      '/..%2F..%2Fhost.json',
      '/projects//tasks',
      '/%2e%2e%2f%2e%2e%2fpackage.json',
      `/projects/${home.projects[0]}/tasks`,
    ]) {
      expectClientError(await call('GET', path, { token: bearer }), 404, path);
      cases.add();
    }
  });

  hostileTest('X-HTTP-Method-Override does not turn a GET into a DELETE', async (cases) => {
    const bearer = await homeAdmin();
    const id = home.projects[1]!;
    for (const header of ['x-http-method-override', 'x-http-method', 'x-method-override']) {
      const response = await call('GET', `/projects/${id}`, { token: bearer, headers: { [header]: 'DELETE' } });
      expect(response.status).toBe(200);
      cases.add();
    }
    expect((await call('GET', `/projects/${id}`, { token: bearer })).status).toBe(200);
  });

  hostileTest('If-None-Match with *, a weak tag, 100 tags or garbage: a 304 or a 200, with the same headers as any answer', async (cases) => {
    const bearer = await homeAdmin();
    const path = `/projects/${home.projects[1]}`;
    const etag = (await call('GET', path, { token: bearer })).headers.etag as string;
    const conditions: [string, number][] = [
      ['*', 304],
      [etag, 304],
      [`W/${etag}`, 304],
      [Array.from({ length: 100 }, (_, index) => `"tag-${index}"`).join(', '), 200],
      ['garbage', 200],
      ['"unterminated', 200],
      [`${'"x", '.repeat(2000)}${etag}`, 304],
    ];
    for (const [condition, status] of conditions) {
      const response = await call('GET', path, { token: bearer, headers: { 'If-None-Match': condition } });
      expect(response.status, condition.slice(0, 40)).toBe(status);
      if (status === 304) expect(response.headers.etag).toBe(etag);
      cases.add();
    }
  });

  it("the home tenant saw nothing of the other tenant in any of this file's answers (checked per answer above); the marker exists there", async () => {
    const response = await call('GET', `/projects/${other.project}`, { token: await otherAdmin() });
    expect(response.body.name).toContain(MARKER);
    expect(decodeJwt(await otherAdmin()).tid).toBe(OTHER_TENANT);
  });
});

logsAreClean("the query tests' host log", () => host.lines);
