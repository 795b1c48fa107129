/**
 * Hostile request bodies against every write endpoint (POST/PUT projects, POST/PUT tasks, POST
 * rag/index): each is a 4xx in the contract's shape, and stores nothing. test/api/errors.stack.test.ts
 * covers a few of these for POST /api/projects; this file takes every family to every endpoint,
 * and checks after each family that the target data did not change.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { hostileTest, type CaseCounter } from '../support/hostile-cases.js';
import { sharedStackSettings, startOwnHost, stopOwnHosts, type OwnHost } from '../support/own-hosts.js';
import { abandonBody, apiAt, expectClientError, inBatches, sendEndlessBody, type HostileResponse } from '../support/raw-http.js';
import { logsAreClean } from '../support/secrets-and-logs.js';
import { OTHER_TENANT, token } from '../support/stack.js';

type FieldKind = 'text' | 'multiline' | 'email' | 'enum' | 'date' | 'projectId' | 'emails' | 'projectIds';

interface Field {
  name: string;
  kind: FieldKind;
  /** The longest valid value, in characters or items. */
  max: number;
  nullable?: boolean;
}

interface WriteEndpoint {
  label: string;
  method: 'POST' | 'PUT';
  path: () => string;
  token: () => Promise<string>;
  /** A body the endpoint accepts: each case breaks one thing in it, so that one thing is what is refused. */
  validBody: () => Record<string, unknown>;
  fields: Field[];
  /** What the endpoint could change, read so that it can be compared before and after. */
  stored: () => Promise<unknown>;
  /** Every field is optional, so an empty body is no body: every default, not a refusal. */
  bodyMayBeOmitted?: true;
}

const admin = () => token({ roles: ['LMS.Admin'] });
const unique = () => Math.random().toString(36).slice(2, 10);
const BODY_CALLER = `hostile-bodies-${unique()}@contoso.test`;
const RAG_CALLER = `hostile-bodies-rag-${unique()}@contoso.test`;
let projectForTasks: string;
let projectToUpdate: string;
let taskToUpdate: string;

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const response = await shared('POST', path, { token: await admin(), body });
  expect(response.status, response.text).toBe(201);
  return response.body.id;
}

/** A single resource as stored: its representation and ETag. */
async function resourceState(path: string) {
  const response = await shared('GET', path, { token: await admin() });
  return { status: response.status, etag: response.headers.etag, body: response.body };
}

async function listedIds(path: string, bearer: Promise<string>, filter: (item: any) => boolean = () => true): Promise<string[]> {
  const response = await shared('GET', path, { token: await bearer });
  expect(response.status, response.text).toBe(200);
  return response.body.filter(filter).map((item: { id?: string; jobId?: string }) => item.id ?? item.jobId);
}

/** The fields a project or task body can carry, each refused in the ways its kind allows. */
const PROJECT_FIELDS: WriteEndpoint['fields'] = [
  { name: 'name', kind: 'text', max: 200 },
  { name: 'description', kind: 'multiline', max: 10_000 },
  { name: 'owner', kind: 'email', max: 254 },
  { name: 'members', kind: 'emails', max: 500 },
];
const TASK_FIELDS: WriteEndpoint['fields'] = [
  { name: 'title', kind: 'text', max: 200 },
  { name: 'description', kind: 'multiline', max: 10_000 },
  { name: 'status', kind: 'enum', max: 10 },
  { name: 'priority', kind: 'enum', max: 6 },
  { name: 'assignee', kind: 'email', max: 254, nullable: true },
  { name: 'dueDate', kind: 'date', max: 10, nullable: true },
];

const ENDPOINTS: WriteEndpoint[] = [
  {
    label: 'POST /api/projects',
    method: 'POST',
    path: () => '/projects',
    token: () => token({ roles: ['LMS.Admin'], username: BODY_CALLER }),
    validBody: () => ({ name: 'Hostile body' }),
    fields: PROJECT_FIELDS,
    // A create without an owner belongs to the caller; every create with another owner is refused below.
    stored: () => listedIds(`/projects?owner=${encodeURIComponent(BODY_CALLER)}&limit=200`, admin()),
  },
  {
    label: 'PUT /api/projects/{id}',
    method: 'PUT',
    path: () => `/projects/${projectToUpdate}`,
    token: admin,
    validBody: () => ({ description: 'Changed by a hostile body' }),
    fields: [...PROJECT_FIELDS, { name: 'status', kind: 'enum', max: 9 }],
    stored: () => resourceState(`/projects/${projectToUpdate}`),
  },
  {
    label: 'POST /api/tasks',
    method: 'POST',
    path: () => '/tasks',
    token: () => token({ roles: ['LMS.Member'] }),
    validBody: () => ({ projectId: projectForTasks, title: 'Hostile body' }),
    fields: [{ name: 'projectId', kind: 'projectId', max: 19 }, ...TASK_FIELDS],
    stored: () => listedIds(`/tasks?projectId=${projectForTasks}&limit=200`, admin()),
  },
  {
    label: 'PUT /api/tasks/{id}',
    method: 'PUT',
    path: () => `/tasks/${taskToUpdate}`,
    token: () => token({ roles: ['LMS.Member'] }),
    validBody: () => ({ description: 'Changed by a hostile body' }),
    fields: TASK_FIELDS,
    stored: () => resourceState(`/tasks/${taskToUpdate}`),
  },
  {
    // In the other tenant, whose RAG lock the RAG tests of the home tenant never hold.
    label: 'POST /api/rag/index',
    method: 'POST',
    path: () => '/rag/index',
    token: () => token({ tenant: OTHER_TENANT, roles: ['LMS.Manager'], username: RAG_CALLER }),
    validBody: () => ({ mode: 'incremental', projectIds: ['PRJ-1001'] }),
    bodyMayBeOmitted: true,
    fields: [
      { name: 'mode', kind: 'enum', max: 11 },
      { name: 'projectIds', kind: 'projectIds', max: 100 },
    ],
    stored: async () => {
      const oid = decodeJwt(await token({ tenant: OTHER_TENANT, roles: ['LMS.Manager'], username: RAG_CALLER })).oid;
      return listedIds('/rag/jobs?limit=200', token({ tenant: OTHER_TENANT, roles: ['LMS.Manager'] }), (job) => job.requestedBy === oid);
    },
  },
];

// A host of this file's own (on the shared database and identity provider): a body that costs the
// host seconds of work must not slow down the other test files' host.
let host: OwnHost;
let shared: ReturnType<typeof apiAt>;
// Bodies that are expensive to refuse go to yet another host, so that a slow refusal cannot make the
// before-and-after reads of the other tests fail.
let heavyHost: OwnHost;
let heavy: ReturnType<typeof apiAt>;

beforeAll(async () => {
  [host, heavyHost] = await Promise.all([startOwnHost(sharedStackSettings()), startOwnHost(sharedStackSettings())]);
  shared = apiAt(host.url);
  heavy = apiAt(heavyHost.url);
  projectForTasks = await create('/projects', { name: 'Hostile bodies: tasks go here', owner: `tasks-${unique()}@contoso.test` });
  projectToUpdate = await create('/projects', { name: 'Hostile bodies: updated in vain', description: 'Original', owner: `update-${unique()}@contoso.test` });
  taskToUpdate = await create('/tasks', { projectId: projectForTasks, title: 'Hostile bodies: updated in vain', description: 'Original' });
});

afterAll(stopOwnHosts);

// ------------------------------------------------------------------ the values that break one field

const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const deepArray = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const emails = (count: number) => Array.from({ length: count }, (_, index) => `member${index}@contoso.test`);
const projectIds = (count: number) => Array.from({ length: count }, (_, index) => `PRJ-${1001 + index}`);
const isList = (field: Field) => field.kind === 'emails' || field.kind === 'projectIds';

/** A valid value of the field, to carry a NUL byte or a lone surrogate. */
function validValue(field: Field): string {
  switch (field.kind) {
    case 'email':
    case 'emails':
      return 'kim@contoso.test';
    case 'enum':
      return field.name === 'priority' ? 'High' : field.name === 'mode' ? 'full' : field.name === 'status' ? (field.max === 9 ? 'OnHold' : 'Done') : 'x';
    case 'date':
      return '2027-01-15';
    case 'projectId':
    case 'projectIds':
      return 'PRJ-1001';
    default:
      return 'Plain text';
  }
}

function tooLong(field: Field): unknown {
  switch (field.kind) {
    case 'text':
    case 'multiline':
      return '😀'.repeat(field.max + 1);
    case 'email':
      return `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.test`;
    case 'emails':
      return emails(field.max + 1);
    case 'projectIds':
      return projectIds(field.max + 1);
    case 'projectId':
      return `PRJ-${'1'.repeat(5000)}`;
    default:
      return `${validValue(field)}${'x'.repeat(10_000)}`;
  }
}

/** Each case: a label and a body, sent as JSON unless it is a string. */
type BodyCase = [label: string, body: unknown];

function withField(endpoint: WriteEndpoint, field: Field, value: unknown): Record<string, unknown> {
  return { ...endpoint.validBody(), [field.name]: value };
}

function fieldCases(endpoint: WriteEndpoint, make: (field: Field) => [string, unknown][]): BodyCase[] {
  return endpoint.fields.flatMap((field) => make(field).map(([label, value]): BodyCase => [`${field.name} ${label}`, withField(endpoint, field, value)]));
}

// ------------------------------------------------------------------ sending and checking

async function expectRefused(
  endpoint: WriteEndpoint,
  cases: CaseCounter,
  bodyCases: BodyCase[],
  statuses: number[],
  options: { detailFor?: (label: string) => string | undefined; headers?: Record<string, string>; via?: ReturnType<typeof apiAt> } = {},
) {
  const bearer = await endpoint.token();
  const before = await endpoint.stored();
  await inBatches(bodyCases, 6, async ([label, body]) => {
    const response: HostileResponse = await (options.via ?? shared)(endpoint.method, endpoint.path(), {
      token: bearer,
      body,
      ...(options.headers ? { headers: options.headers } : {}),
    });
    expectClientError(response, statuses, `${endpoint.label} with ${label}`);
    const field = options.detailFor?.(label);
    if (field !== undefined) {
      const paths = (response.body.details ?? []).map((detail: { path: string }) => detail.path);
      expect(
        paths.some((path: string) => path === field || path.startsWith(`${field}.`)),
        `${label}: details ${JSON.stringify(paths)} name ${field}`,
      ).toBe(true);
    }
    cases.add();
  });
  expect(await endpoint.stored(), `what ${endpoint.label} could change, after ${bodyCases.length} refused bodies`).toEqual(before);
}

const fieldOf = (label: string) => label.split(' ')[0];

/** Every field of the endpoint given each value `make` names for it is a 400 whose details name that field. */
function expectRefusedInEveryField(endpoint: WriteEndpoint, cases: CaseCounter, make: (field: Field) => [string, unknown][]) {
  return expectRefused(endpoint, cases, fieldCases(endpoint, make), [400], { detailFor: fieldOf });
}

// ------------------------------------------------------------------ the tests

for (const endpoint of ENDPOINTS) {
  describe(`hostile bodies to ${endpoint.label}: each a 4xx in the contract shape, nothing stored`, () => {
    hostileTest('invalid JSON, a JSON array or a scalar (400)', async (cases) => {
      const valid = JSON.stringify(endpoint.validBody());
      await expectRefused(
        endpoint,
        cases,
        [
          ['truncated JSON', valid.slice(0, -1)],
          ['a trailing comma', `${valid.slice(0, -1)},}`],
          ['single quotes', valid.replace(/"/g, "'")],
          ['a comment', `/* x */${valid}`],
          ['NaN as a value', `${valid.slice(0, -1)},"x":NaN}`],
          ['two JSON documents', `${valid}${valid}`],
          ...(endpoint.bodyMayBeOmitted ? [] : [['an empty body', ''] as BodyCase]),
          ['only whitespace', ' \n\t '],
          ['a JSON array', `[${valid}]`],
          ['a JSON string', JSON.stringify(valid)],
          ['a JSON number', '42'],
          ['true', 'true'],
          ['null', 'null'],
          ['a raw NUL byte inside a string', valid.replace(/:"([^"]*)"/, ':"$1\u0000"')],
          ['a raw line break inside a string', valid.replace(/:"([^"]*)"/, ':"$1\n"')],
        ],
        [400],
      );
    });

    hostileTest('a 2 MB body is a 413 decided before the body ends; an endless chunked one, which Azure hands over empty, a 411 at once', async (cases) => {
      const bearer = await endpoint.token();
      const before = await endpoint.stored();
      const declared = await sendEndlessBody(host.url, endpoint.method, endpoint.path(), { token: bearer, declaredLength: 2 * 1024 * 1024 });
      expectClientError(declared, 413, 'declared 2 MB');
      expect(declared.answeredBeforeTheEnd, 'answered from Content-Length, with only 16 KB sent').toBe(true);
      const chunked = await sendEndlessBody(host.url, endpoint.method, endpoint.path(), { token: bearer });
      expectClientError(chunked, 411, 'endless and chunked');
      expect(chunked.answeredBeforeTheEnd, 'answered while the chunked body was still open').toBe(true);
      cases.add(2);
      // Declared, and larger than the host reads whole: it streams through to the app's limit.
      const whole = await shared(endpoint.method, endpoint.path(), {
        token: bearer,
        body: withField(endpoint, endpoint.fields[0]!, 'a'.repeat(2 * 1024 * 1024)),
      });
      expectClientError(whole, 413, 'a whole 2 MB JSON body');
      cases.add();
      expect(await endpoint.stored()).toEqual(before);
    });

    hostileTest('a body abandoned part way, declared or chunked, stores nothing and the host serves the next request', async (cases) => {
      const bearer = await endpoint.token();
      const before = await endpoint.stored();
      const valid = JSON.stringify(endpoint.validBody());
      const part = valid.slice(0, Math.ceil(valid.length / 2));
      await abandonBody(host.url, endpoint.method, endpoint.path(), { token: bearer, part, declaredLength: Buffer.byteLength(valid) });
      await abandonBody(host.url, endpoint.method, endpoint.path(), { token: bearer, part });
      cases.add(2);
      const next = await shared('GET', '/users/me', { token: bearer });
      expect(next.status, next.text).toBe(200);
      expect(await endpoint.stored()).toEqual(before);
    });

    hostileTest('nesting 10,000 deep, in an unknown member and in every field (400)', async (cases) => {
      await expectRefused(
        endpoint,
        cases,
        [
          ['objects 10,000 deep under an unknown member', `{"nested":${deepObject(10_000)}}`],
          ['arrays 10,000 deep as the whole body', deepArray(10_000)],
          ['arrays 500,000 deep (1 MB)', deepArray(500_000)],
          ...endpoint.fields.map((field): BodyCase => [
            `${field.name} nested 10,000 deep`,
            JSON.stringify(endpoint.validBody()).replace(/}$/, `${Object.keys(endpoint.validBody()).length ? ',' : ''}"${field.name}":${deepArray(10_000)}}`),
          ]),
        ],
        [400],
      );
    });

    hostileTest('__proto__, constructor and prototype keys (400), without polluting any prototype', async (cases) => {
      const pollution = { status: 'Archived', priority: 'Urgent', owner: 'evil@contoso.test', roles: ['LMS.Admin'], isAdmin: true, mode: 'full' };
      const valid = JSON.stringify(endpoint.validBody()).slice(1, -1);
      const join = (extra: string) => `{${valid}${valid ? ',' : ''}${extra}}`;
      await expectRefused(
        endpoint,
        cases,
        [
          ['__proto__', join(`"__proto__":${JSON.stringify(pollution)}`)],
          ['constructor.prototype', join(`"constructor":{"prototype":${JSON.stringify(pollution)}}`)],
          ['prototype', join(`"prototype":${JSON.stringify(pollution)}`)],
          ['__proto__ as the only member', `{"__proto__":${JSON.stringify(pollution)}}`],
          ...endpoint.fields
            .filter(isList)
            .map((field): BodyCase => [`__proto__ inside ${field.name}`, join(`"${field.name}":[{"__proto__":${JSON.stringify(pollution)}}]`)]),
        ],
        [400],
        { detailFor: (label) => (label.startsWith('__proto__ inside') ? label.split(' ')[2] : undefined) },
      );
      // A polluted Object.prototype would show through the fields a create or update leaves out.
      const owner = `canary-${unique()}@contoso.test`;
      const canary = await shared('POST', '/projects', { token: await admin(), body: { name: 'Canary', owner } });
      expect(canary.body).toMatchObject({ status: 'Active', owner, members: [owner] });
      expect(canary.body).not.toHaveProperty('isAdmin');
      const task = await shared('POST', '/tasks', { token: await admin(), body: { projectId: canary.body.id, title: 'Canary' } });
      expect(task.body).toMatchObject({ status: 'Todo', priority: 'Medium', assignee: null, dueDate: null });
      const renamed = await shared('PUT', `/projects/${canary.body.id}`, { token: await admin(), body: { name: 'Canary renamed' } });
      expect(renamed.body).toMatchObject({ status: 'Active', owner });
    });

    hostileTest('NUL bytes and lone surrogates in every text field (400)', async (cases) => {
      await expectRefusedInEveryField(endpoint, cases, (field) => {
        const value = validValue(field);
        const wrap = (text: string) => (isList(field) ? [text] : text);
        return [
          ['with a NUL byte', wrap(`${value.slice(0, 3)}\u0000${value.slice(3)}`)],
          ['ending in a NUL byte', wrap(`${value}\u0000`)],
          ['with a lone high surrogate', wrap(`${value}\ud800`)],
          ['with a lone low surrogate', wrap(`\udc00${value}`)],
          ['with a reversed surrogate pair', wrap(`${value}\ude00\ud83d`)],
          ['with an escape control character', wrap(`${value}\u001b[31m`)],
        ];
      });
    });

    hostileTest('strings and lists over the limits in every field (400)', async (cases) => {
      await expectRefusedInEveryField(endpoint, cases, (field) => [[`one over its limit of ${field.max}`, tooLong(field)]]);
    });

    hostileTest('objects with 10,000 members and lists of 10,000 items (400)', async (cases) => {
      const manyMembers = Object.fromEntries(Array.from({ length: 10_000 }, (_, index) => [`member${index}`, index]));
      await expectRefused(
        endpoint,
        cases,
        [
          ['an object with 10,000 unknown members', { ...endpoint.validBody(), ...manyMembers }],
          ...endpoint.fields.map((field): BodyCase => [
            `${field.name} as 10,000 items or an object of 10,000 members`,
            withField(endpoint, field, isList(field) ? (field.kind === 'emails' ? emails(10_000) : projectIds(10_000)) : manyMembers),
          ]),
        ],
        [400],
        { via: heavy },
      );
    });

    hostileTest('numbers, booleans, objects and lists where strings belong, and the reverse (400)', async (cases) => {
      await expectRefusedInEveryField(endpoint, cases, (field) =>
        isList(field)
          ? [
              ['as a single string', validValue(field)],
              ['as a number', 5],
              ['as an object', { 0: validValue(field) }],
              ['holding a number', [1001]],
              ['holding a list', [[validValue(field)]]],
              ['holding null', [null]],
            ]
          : [
              ['as a number', 5],
              ['as a huge number', 1e308],
              ['as true', true],
              ['as an object', { value: validValue(field) }],
              ['as a list', [validValue(field)]],
            ],
      );
    });

    hostileTest('null in every field that does not take it (400)', async (cases) => {
      const notNullable = endpoint.fields.filter((field) => !field.nullable);
      await expectRefused(
        endpoint,
        cases,
        [
          ...notNullable.map((field): BodyCase => [`${field.name} null`, withField(endpoint, field, null)]),
          ['every field null', Object.fromEntries(endpoint.fields.map((field) => [field.name, null]))],
        ],
        [400],
        { detailFor: (label) => (label.startsWith('every') ? undefined : fieldOf(label)) },
      );
    });

    hostileTest('bodies that are not UTF-8 JSON: wrong media type or charset (415), bytes that are not UTF-8 (400)', async (cases) => {
      const valid = JSON.stringify(endpoint.validBody());
      for (const contentType of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=utf-16',
        'application/json; charset=iso-8859-1',
        'application/jsonp',
        'application/json-patch+json',
        'text/json',
        '',
      ]) {
        await expectRefused(endpoint, cases, [[`Content-Type "${contentType}"`, valid]], [415], { headers: { 'content-type': contentType } });
      }
      await expectRefused(
        endpoint,
        cases,
        [
          ['UTF-16LE bytes declared as UTF-8 JSON', Buffer.from(valid, 'utf16le')],
          ['an invalid UTF-8 byte', Buffer.concat([Buffer.from(valid.slice(0, -2)), Buffer.from([0xff]), Buffer.from(valid.slice(-2))])],
          [
            'an overlong encoding of a quote',
            Buffer.concat([Buffer.from(valid.slice(0, -1)), Buffer.from(',"x":'), Buffer.from([0xc0, 0xa2]), Buffer.from('}')]),
          ],
          ['a UTF-8-encoded surrogate', Buffer.concat([Buffer.from(valid.slice(0, -2)), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(valid.slice(-2))])],
          ['a truncated multi-byte character', Buffer.concat([Buffer.from(valid.slice(0, -2)), Buffer.from([0xe3, 0x81]), Buffer.from(valid.slice(-2))])],
        ],
        [400],
      );
    });
  });
}

logsAreClean("the body tests' host logs", () => [...host.lines, ...heavyHost.lines]);
