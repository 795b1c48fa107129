/**
 * Reading a tenant's documents as their readers may see them (shared/data/tenant-queries.ts), through
 * the repositories that use it: a page of a list, a page of ids, the documents among some ids. In
 * process, against the embedded Cosmos store started by this file, reached through a proxy
 * (test/support/cosmos-proxy.ts). The embedded store runs a query over every partition whatever
 * partition key it names (docs/local-stack.md): two tenants' documents stored side by side show that
 * the query's own `c.tenantId` condition keeps each tenant to its own.
 */
import { randomUUID } from 'node:crypto';
import type { SqlQuerySpec } from '@azure/cosmos';
import { describe, expect, it } from 'vitest';
import { listProjects, projectSources } from '../../../shared/data/projects-repository.js';
import { listTasks, taskSources } from '../../../shared/data/tasks-repository.js';
import type { ListProjectsQuery } from '../../../shared/schemas/projects.js';
import type { ListTasksQuery } from '../../../shared/schemas/tasks.js';
import { embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';

const embedded = embeddedStoreForTests();

/** A project as its readers see it. */
function projectResource(id: string, fields: { name?: string; status?: string; owner?: string; members?: string[]; createdAt?: string } = {}) {
  const owner = fields.owner ?? 'owner@contoso.test';
  return {
    id,
    name: fields.name ?? `Name of ${id}`,
    description: `About ${id}`,
    status: fields.status ?? 'Active',
    owner,
    members: fields.members ?? [owner],
    createdAt: fields.createdAt ?? '2026-11-01T00:00:00.000Z',
    updatedAt: fields.createdAt ?? '2026-11-01T00:00:00.000Z',
    createdBy: 'creator-oid',
  };
}
type ProjectResource = ReturnType<typeof projectResource>;

/** Stores a project as the app does, with the bookkeeping readers never see; `deleting` while a delete runs. */
async function storedProject(tenantId: string, resource: ProjectResource, extra: { deleting?: true; type?: string } = {}): Promise<ProjectResource> {
  await embedded.direct().items.create({ ...resource, tenantId, type: 'project', nameSort: resource.name.toLowerCase(), ...extra });
  return resource;
}

function taskResource(id: string, projectId: string, fields: { status?: string; assignee?: string | null; dueDate?: string | null; createdAt?: string } = {}) {
  return {
    id,
    projectId,
    title: `Title of ${id}`,
    description: '',
    status: fields.status ?? 'Todo',
    priority: 'Medium',
    assignee: fields.assignee ?? null,
    dueDate: fields.dueDate ?? null,
    createdAt: fields.createdAt ?? '2026-11-01T00:00:00.000Z',
    updatedAt: fields.createdAt ?? '2026-11-01T00:00:00.000Z',
    createdBy: 'creator-oid',
  };
}
type TaskResource = ReturnType<typeof taskResource>;

async function storedTask(tenantId: string, resource: TaskResource): Promise<TaskResource> {
  await embedded.direct().items.create({ ...resource, tenantId, type: 'task', priorityRank: 2 });
  return resource;
}

const projectsQuery = (query: Partial<ListProjectsQuery> = {}): ListProjectsQuery => ({ sort: 'name', limit: 50, cursor: undefined, ...query });
const tasksQuery = (query: Partial<ListTasksQuery> = {}): ListTasksQuery => ({ sort: 'createdAt', limit: 50, cursor: undefined, ...query });

/**
 * Two tenants whose projects share ids and names, each with a project being deleted, and in the first
 * a document of another type shaped like a project: what must never reach the first tenant's readers
 * is stored next to what must.
 */
async function twoTenants() {
  const tenantId = randomUUID();
  const otherTenantId = randomUUID();
  const visible = [
    await storedProject(tenantId, projectResource('PRJ-1', { name: 'Alpha' })),
    await storedProject(tenantId, projectResource('PRJ-2', { name: 'bravo', status: 'Planning' })),
  ];
  await storedProject(tenantId, projectResource('PRJ-3', { name: 'Charlie' }), { deleting: true });
  await storedProject(tenantId, projectResource('LOOK-1', { name: 'Delta' }), { type: 'lookalike' });
  await storedProject(otherTenantId, projectResource('PRJ-1', { name: 'Alpha of the other tenant' }));
  await storedProject(otherTenantId, projectResource('PRJ-4', { name: 'Echo' }));
  await storedProject(otherTenantId, projectResource('PRJ-5', { name: 'Foxtrot' }), { deleting: true });
  return { tenantId, otherTenantId, visible };
}

/** The queries the app sent since request number `from`. */
const queriesSince = (from: number) => embedded.store.requests.slice(from).filter((request) => request.isQuery);

describe('every query', () => {
  it("is sent to the caller's tenant's partition, where Azure runs it", async () => {
    const { tenantId } = await twoTenants();
    const from = embedded.store.requests.length;
    await listProjects(adminCaller(tenantId).tenantId, projectsQuery());
    await projectSources.idPage(tenantId, null, 100, undefined);
    await projectSources.byIds(tenantId, ['PRJ-1']);
    const queries = queriesSince(from);
    expect(queries).toHaveLength(3);
    for (const query of queries) expect(query.partitionKey).toBe(JSON.stringify([tenantId]));
  });
});

describe('a page of a list', () => {
  it("holds the caller's tenant's visible documents of the kind, as resources: none of another tenant, another type, or being deleted", async () => {
    const { tenantId, otherTenantId, visible } = await twoTenants();
    expect(await listProjects(adminCaller(tenantId).tenantId, projectsQuery())).toEqual({ items: visible, nextCursor: undefined });
    expect(await listProjects(adminCaller(otherTenantId).tenantId, projectsQuery())).toEqual({
      items: [projectResource('PRJ-1', { name: 'Alpha of the other tenant' }), projectResource('PRJ-4', { name: 'Echo' })],
      nextCursor: undefined,
    });
    expect(await listProjects(adminCaller().tenantId, projectsQuery())).toEqual({ items: [], nextCursor: undefined });
  });

  it('of a kind that hides nothing holds all of its documents in the tenant', async () => {
    const tenantId = randomUUID();
    const stored = [
      await storedTask(tenantId, taskResource('TSK-1', 'PRJ-1', { createdAt: '2026-11-01T00:00:00.000Z' })),
      await storedTask(tenantId, taskResource('TSK-2', 'PRJ-2', { createdAt: '2026-11-02T00:00:00.000Z' })),
    ];
    await storedTask(randomUUID(), taskResource('TSK-3', 'PRJ-1'));
    expect(await listTasks(adminCaller(tenantId).tenantId, tasksQuery())).toEqual({ items: stored, nextCursor: undefined });
  });

  it('meets each filter given, and only those given', async () => {
    const tenantId = randomUUID();
    const planning = await storedProject(tenantId, projectResource('PRJ-1', { name: 'Apollo', status: 'Planning', owner: 'ann@contoso.test' }));
    const active = await storedProject(
      tenantId,
      projectResource('PRJ-2', { name: 'Gemini', status: 'Active', owner: 'bob@contoso.test', members: ['bob@contoso.test', 'ann@contoso.test'] }),
    );
    const other = await storedProject(tenantId, projectResource('PRJ-3', { name: 'Mercury', status: 'Active', owner: 'cat@contoso.test' }));
    // The same values in another tenant are never among them.
    await storedProject(randomUUID(), projectResource('PRJ-4', { name: 'Apollo', status: 'Planning', owner: 'ann@contoso.test' }));
    const caller = adminCaller(tenantId);
    const listed = async (query: Partial<ListProjectsQuery>) => (await listProjects(caller.tenantId, projectsQuery(query))).items;
    expect(await listed({})).toEqual([planning, active, other]);
    expect(await listed({ status: 'Active' })).toEqual([active, other]);
    expect(await listed({ owner: 'ann@contoso.test' })).toEqual([planning]);
    expect(await listed({ member: 'ann@contoso.test' })).toEqual([planning, active]);
    expect(await listed({ q: 'mini' })).toEqual([active]);
    expect(await listed({ status: 'Active', member: 'ann@contoso.test' })).toEqual([active]);
    expect(await listed({ status: 'Completed' })).toEqual([]);
  });

  it('is in the order asked', async () => {
    const tenantId = randomUUID();
    const first = await storedProject(tenantId, projectResource('PRJ-1', { name: 'b', createdAt: '2026-11-03T00:00:00.000Z' }));
    const second = await storedProject(tenantId, projectResource('PRJ-2', { name: 'C', createdAt: '2026-11-01T00:00:00.000Z' }));
    const third = await storedProject(tenantId, projectResource('PRJ-3', { name: 'a', createdAt: '2026-11-02T00:00:00.000Z' }));
    const order = async (sort: ListProjectsQuery['sort']) =>
      (await listProjects(adminCaller(tenantId).tenantId, projectsQuery({ sort }))).items.map(({ id }) => id);
    expect(await order('name')).toEqual([third.id, first.id, second.id]);
    expect(await order('-name')).toEqual([second.id, first.id, third.id]);
    expect(await order('createdAt')).toEqual([second.id, third.id, first.id]);
    expect(await order('-createdAt')).toEqual([first.id, third.id, second.id]);
  });

  it('goes on from its cursor to the end, each document once, the hidden ones left out', async () => {
    const tenantId = randomUUID();
    const names = ['a', 'b', 'c', 'd', 'e'];
    for (const [index, name] of names.entries()) {
      await storedProject(tenantId, projectResource(`PRJ-${index + 1}`, { name }), index === 2 ? { deleting: true } : {});
    }
    await storedProject(randomUUID(), projectResource('PRJ-9', { name: 'b2' }));
    const caller = adminCaller(tenantId);
    const first = await listProjects(caller.tenantId, projectsQuery({ limit: 2 }));
    expect(first.items.map(({ name }) => name)).toEqual(['a', 'b']);
    expect(first.nextCursor).toEqual(expect.any(String));
    const last = await listProjects(caller.tenantId, projectsQuery({ limit: 2, cursor: first.nextCursor }));
    expect(last.items.map(({ name }) => name)).toEqual(['d', 'e']);
    expect(last.nextCursor).toBeUndefined();
  });

  it("has a cursor bound to the tenant, the kind, the filters and the order: any other list's is a 400", async () => {
    const tenantId = randomUUID();
    for (const index of [1, 2, 3]) {
      await storedProject(tenantId, projectResource(`PRJ-${index}`, { status: 'Active' }));
      await storedTask(tenantId, taskResource(`TSK-${index}`, `PRJ-${index}`));
    }
    const caller = adminCaller(tenantId);
    const { nextCursor: cursor } = await listProjects(caller.tenantId, projectsQuery({ status: 'Active', limit: 1 }));
    expect(cursor).toEqual(expect.any(String));
    // The same list goes on from it.
    expect((await listProjects(caller.tenantId, projectsQuery({ status: 'Active', limit: 1, cursor }))).items).toHaveLength(1);
    const otherQuery = expect.objectContaining({ refusal: 'invalid', messageKey: 'cursorForOtherQuery' });
    await expect(listProjects(adminCaller().tenantId, projectsQuery({ status: 'Active', limit: 1, cursor }))).rejects.toEqual(otherQuery);
    await expect(listProjects(caller.tenantId, projectsQuery({ status: 'Planning', limit: 1, cursor }))).rejects.toEqual(otherQuery);
    await expect(listProjects(caller.tenantId, projectsQuery({ limit: 1, cursor }))).rejects.toEqual(otherQuery);
    await expect(listProjects(caller.tenantId, projectsQuery({ status: 'Active', sort: '-name', limit: 1, cursor }))).rejects.toEqual(otherQuery);
    // Another kind's list, in the same order with no filter.
    const { nextCursor: projectsCursor } = await listProjects(caller.tenantId, projectsQuery({ sort: 'createdAt', limit: 1 }));
    expect((await listProjects(caller.tenantId, projectsQuery({ sort: 'createdAt', limit: 1, cursor: projectsCursor }))).items).toHaveLength(1);
    await expect(listTasks(caller.tenantId, tasksQuery({ sort: 'createdAt', limit: 1, cursor: projectsCursor }))).rejects.toEqual(otherQuery);
  });

  it('sends every filter value as a parameter, never in the query text', async () => {
    const tenantId = randomUUID();
    const from = embedded.store.requests.length;
    const hostile = `x' OR 1=1 OR c.name = 'y`;
    expect((await listProjects(adminCaller(tenantId).tenantId, projectsQuery({ owner: hostile, q: hostile }))).items).toEqual([]);
    const queries = queriesSince(from);
    expect(queries).toHaveLength(1);
    const sent = JSON.parse(queries[0]!.body) as SqlQuerySpec;
    expect(sent.query).not.toContain(hostile);
    expect(sent.parameters).toEqual(
      expect.arrayContaining([
        { name: '@tenantId', value: tenantId },
        { name: '@owner', value: hostile },
        { name: '@q', value: hostile },
      ]),
    );
  });
});

describe('a page of ids', () => {
  /** The page with its ids in order: a query without ORDER BY promises none. */
  const sorted = ({ ids, continuation }: { ids: string[]; continuation: string | undefined }) => ({ ids: [...ids].sort(), continuation });

  it("holds the ids of the caller's tenant's visible documents, of the projects named or of all", async () => {
    const { tenantId, otherTenantId } = await twoTenants();
    expect(sorted(await projectSources.idPage(tenantId, null, 100, undefined))).toEqual({ ids: ['PRJ-1', 'PRJ-2'], continuation: undefined });
    expect(sorted(await projectSources.idPage(otherTenantId, null, 100, undefined))).toEqual({ ids: ['PRJ-1', 'PRJ-4'], continuation: undefined });
    expect(await projectSources.idPage(tenantId, ['PRJ-2', 'PRJ-3', 'PRJ-4', 'LOOK-1'], 100, undefined)).toEqual({ ids: ['PRJ-2'], continuation: undefined });
    expect(await projectSources.idPage(tenantId, [], 100, undefined)).toEqual({ ids: [], continuation: undefined });
  });

  it("of a kind's documents that belong to the projects named", async () => {
    const tenantId = randomUUID();
    await storedTask(tenantId, taskResource('TSK-1', 'PRJ-1'));
    await storedTask(tenantId, taskResource('TSK-2', 'PRJ-2'));
    await storedTask(tenantId, taskResource('TSK-3', 'PRJ-1'));
    await storedTask(randomUUID(), taskResource('TSK-4', 'PRJ-1'));
    expect(sorted(await taskSources.idPage(tenantId, ['PRJ-1'], 100, undefined))).toEqual({ ids: ['TSK-1', 'TSK-3'], continuation: undefined });
    expect(sorted(await taskSources.idPage(tenantId, null, 100, undefined))).toEqual({ ids: ['TSK-1', 'TSK-2', 'TSK-3'], continuation: undefined });
  });

  it('is as long as asked, and goes on from its continuation to the end, each id once', async () => {
    const tenantId = randomUUID();
    for (const index of [1, 2, 3, 4, 5]) await storedProject(tenantId, projectResource(`PRJ-${index}`));
    const first = await projectSources.idPage(tenantId, null, 2, undefined);
    expect(first).toEqual({ ids: [expect.any(String), expect.any(String)], continuation: expect.any(String) });
    const second = await projectSources.idPage(tenantId, null, 2, first.continuation);
    expect(second).toEqual({ ids: [expect.any(String), expect.any(String)], continuation: expect.any(String) });
    const last = await projectSources.idPage(tenantId, null, 2, second.continuation);
    expect(last).toEqual({ ids: [expect.any(String)], continuation: undefined });
    expect([...first.ids, ...second.ids, ...last.ids].sort()).toEqual(['PRJ-1', 'PRJ-2', 'PRJ-3', 'PRJ-4', 'PRJ-5']);
  });

  it('is filled from short pages, asking each time for what is missing', async () => {
    const tenantId = randomUUID();
    for (const index of [1, 2, 3, 4, 5, 6]) await storedProject(tenantId, projectResource(`PRJ-${index}`));
    // The store answers the first query with one id and a continuation, as Cosmos may before the end.
    let shortPages = 1;
    embedded.store.intercept = async (record) => {
      if (!record.isQuery || shortPages === 0) return undefined;
      shortPages--;
      const page = await embedded
        .direct()
        .items.query<string>(JSON.parse(record.body) as SqlQuerySpec, { partitionKey: tenantId, maxItemCount: 1 })
        .fetchNext();
      return { status: 200, headers: { 'x-ms-continuation': page.continuationToken, 'x-ms-item-count': '1' }, body: { Documents: page.resources, _count: 1 } };
    };
    const from = embedded.store.requests.length;
    const page = await projectSources.idPage(tenantId, null, 3, undefined);
    expect(page).toEqual({ ids: [expect.any(String), expect.any(String), expect.any(String)], continuation: expect.any(String) });
    expect(queriesSince(from)).toHaveLength(2);
    const rest = await projectSources.idPage(tenantId, null, 3, page.continuation);
    expect(rest).toEqual({ ids: [expect.any(String), expect.any(String), expect.any(String)], continuation: undefined });
    expect([...page.ids, ...rest.ids].sort()).toEqual(['PRJ-1', 'PRJ-2', 'PRJ-3', 'PRJ-4', 'PRJ-5', 'PRJ-6']);
  });
});

describe('the documents among some ids', () => {
  it("are the caller's tenant's visible documents of the kind among them, as resources", async () => {
    const { tenantId, visible } = await twoTenants();
    const found = await projectSources.byIds(tenantId, ['PRJ-1', 'PRJ-2', 'PRJ-3', 'PRJ-4', 'LOOK-1', 'PRJ-none']);
    expect(found.sort((a, b) => a.id.localeCompare(b.id))).toEqual(visible);
    expect(await projectSources.byIds(tenantId, ['PRJ-2'])).toEqual([visible[1]]);
    expect(await projectSources.byIds(tenantId, [])).toEqual([]);
  });

  it('of a kind that hides nothing', async () => {
    const tenantId = randomUUID();
    const first = await storedTask(tenantId, taskResource('TSK-1', 'PRJ-1'));
    await storedTask(tenantId, taskResource('TSK-2', 'PRJ-1'));
    await storedTask(randomUUID(), taskResource('TSK-1', 'PRJ-1', { status: 'Done' }));
    expect(await taskSources.byIds(tenantId, ['TSK-1', 'TSK-3'])).toEqual([first]);
  });
});
