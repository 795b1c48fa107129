/**
 * Projects (shared/data/projects-repository.ts), in process, against the embedded Cosmos store of the
 * local stack started by this file: the readable ids, the owner and members, the status moves, an
 * Archived project read-only, If-Match, the caller's tenant only, the event each change writes, and
 * a delete that takes the project's tasks with it, also when it races another delete or a task
 * create. The status rules themselves are test/shared/domain/projects.test.ts's; the list's paging and
 * cursors test/shared/data/tenant-queries.test.ts's. The app reaches the store through a proxy
 * (test/support/cosmos-proxy.ts) that can hold a request while another instance, which goes to the
 * store directly, writes first.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../shared/auth/principal.js';
import { ownerOf } from '../../../shared/domain/projects.js';
import { versionOf } from '../../../shared/domain/versions.js';
import { RuleError } from '../../../shared/domain/errors.js';
import type { EventDocument } from '../../../shared/data/events.js';
import {
  createProject,
  deleteProject,
  getProject,
  listProjects,
  projects,
  projectSources,
  readProjectDocument,
  updateProject,
  type ProjectDocument,
} from '../../../shared/data/projects-repository.js';
import { createTask, taskDocument } from '../../../shared/data/tasks-repository.js';
import type { CreateProjectBody, ListProjectsQuery, Project } from '../../../shared/schemas/projects.js';
import { beforeRequest, isBatch, type CosmosRequestRecord } from '../../support/cosmos-proxy.js';
import { documentsOf, embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';

const embedded = embeddedStoreForTests();

async function stored<T = ProjectDocument>(tenantId: string, id: string): Promise<T | undefined> {
  const { resource } = await embedded.direct().item(id, tenantId).read<T & object>();
  return resource;
}

/** Changes a stored document as another writer would. */
async function storedChange<T extends object = ProjectDocument>(tenantId: string, id: string, fields: Partial<T>): Promise<T> {
  const current = (await stored<T>(tenantId, id))!;
  const { resource } = await embedded
    .direct()
    .item(id, tenantId)
    .replace({ ...current, ...fields });
  return resource as unknown as T;
}

/** The tenant's events, as `type: data`, oldest first. */
async function eventsOf(tenantId: string): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const events = await documentsOf<EventDocument>(embedded.direct(), tenantId, 'event');
  return events.sort((a, b) => a.timestamp.localeCompare(b.timestamp)).map(({ eventType, data }) => ({ type: eventType, data }));
}

const taskIdsOf = async (tenantId: string) => (await documentsOf<{ id: string }>(embedded.direct(), tenantId, 'task')).map(({ id }) => id).sort();

async function make(principal: Principal, body: Partial<CreateProjectBody> = {}): Promise<Project> {
  const owner = ownerOf(body.owner, principal.email);
  return (await createProject(principal.tenantId, principal.objectId, owner, { name: 'Apollo', ...body }, undefined)).resource;
}

/** A task of the project, as another instance that passed its checks writes it. */
async function taskElsewhere(tenantId: string, projectId: string, number: number): Promise<void> {
  await embedded.direct().items.create(taskDocument(tenantId, number, { projectId, title: `Task ${number}` }, 'elsewhere'));
}

/** The transactional batch that deletes the project (with its event). */
const isProjectDelete = (id: string) => (record: CosmosRequestRecord) =>
  isBatch(record) && record.body.includes('"operationType":"Delete"') && record.body.includes(`"id":"${id}"`) && record.body.includes('project.deleted');

/** A transactional batch of a delete's sweep: it deletes tasks. */
const isSweep = (record: CosmosRequestRecord) => isBatch(record) && record.body.includes('"operationType":"Delete"') && record.body.includes('"id":"TSK-');

/** The second sweep batch to reach the store: the first one went through. */
function secondSweep(): (record: CosmosRequestRecord) => boolean {
  let sweeps = 0;
  return (record) => isSweep(record) && ++sweeps === 2;
}

/** The store's answer to a transactional batch that it refused: 503 for the first operation, 424 for the rest. */
const REFUSED_BATCH = {
  status: 207,
  body: [{ statusCode: 503, requestCharge: 0 }, ...Array.from({ length: 100 }, () => ({ statusCode: 424, requestCharge: 0 }))],
};

const deletedEventsOf = async (tenantId: string) => (await eventsOf(tenantId)).filter(({ type }) => type === 'project.deleted');

/** A transactional batch of this instance's that carries `text`. */
const batchWith = (text: string) => (record: CosmosRequestRecord) => isBatch(record) && record.body.includes(text);

/** Has another instance make `write` when the request `matches` reaches the store: after this instance's read, before its write. */
function meanwhile(matches: (record: CosmosRequestRecord) => boolean, write: () => Promise<unknown>): void {
  beforeRequest(embedded.store, matches, async () => void (await write()));
}

const listQuery = (query: Partial<ListProjectsQuery> = {}): ListProjectsQuery => ({ sort: '-createdAt', limit: 50, cursor: undefined, ...query });

describe('createProject', () => {
  it('answers the project, Active, owned by the caller, who is its first member; stores it with its sort key; writes project.created', async () => {
    const principal = adminCaller();
    const before = Date.now();
    const { resource, replayed } = await createProject(
      principal.tenantId,
      principal.objectId,
      principal.email!,
      { name: 'Ünïcode Ône 🚀', members: ['b@contoso.test', 'owner@contoso.test'] },
      undefined,
    );
    const after = Date.now();

    expect(replayed).toBe(false);
    expect(resource).toEqual({
      id: 'PRJ-1001',
      name: 'Ünïcode Ône 🚀',
      description: '',
      status: 'Active',
      owner: 'owner@contoso.test',
      members: ['owner@contoso.test', 'b@contoso.test'],
      createdAt: resource.createdAt,
      updatedAt: resource.createdAt,
      createdBy: principal.objectId,
    });
    expect(Object.keys(resource)).toEqual(['id', 'name', 'description', 'status', 'owner', 'members', 'createdAt', 'updatedAt', 'createdBy']);
    expect(Date.parse(resource.createdAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(resource.createdAt)).toBeLessThanOrEqual(after);

    const document = (await stored(principal.tenantId, resource.id))!;
    expect(document).toMatchObject({ ...resource, tenantId: principal.tenantId, type: 'project', nameSort: 'ünïcode ône 🚀' });
    expect(document.deleting).toBeUndefined();
    expect(await getProject(principal.tenantId, resource.id)).toEqual(resource);
    expect(await eventsOf(principal.tenantId)).toEqual([{ type: 'project.created', data: resource }]);
  });

  it('numbers the tenant’s projects from 1001, each tenant its own; keeps the owner and description given', async () => {
    const principal = adminCaller();
    expect(await make(principal)).toMatchObject({ id: 'PRJ-1001', members: ['owner@contoso.test'] });
    const second = await make(principal, { owner: 'ann@contoso.test', description: 'About it', members: ['bob@contoso.test'] });
    expect(second).toMatchObject({ id: 'PRJ-1002', owner: 'ann@contoso.test', description: 'About it', members: ['ann@contoso.test', 'bob@contoso.test'] });
    expect((await make(adminCaller())).id).toBe('PRJ-1001');
    // The sequence's name is what keeps an id from being handed out twice, across versions of the app.
    expect(await stored(principal.tenantId, 'sequence-projects')).toMatchObject({ type: 'sequence' });
  });

  it('refuses more than 500 members, the owner counted, and stores nothing; needs an owner when the caller has no e-mail', async () => {
    const principal = adminCaller();
    const members = Array.from({ length: 500 }, (_, index) => `m${index}@contoso.test`);
    await expect(make(principal, { members })).rejects.toMatchObject({ refusal: 'invalid', messageKey: 'tooManyMembers', params: { limit: 500 } });
    await expect(make({ ...principal, email: undefined })).rejects.toMatchObject({ refusal: 'invalid', messageKey: 'ownerRequired' });
    expect(await documentsOf(embedded.direct(), principal.tenantId, 'project')).toEqual([]);
    expect(await eventsOf(principal.tenantId)).toEqual([]);
    expect((await make(principal, { members: members.slice(1) })).members).toHaveLength(500);
  });

  it('answers a repeated Idempotency-Key with the first result and makes one project', async () => {
    const principal = adminCaller();
    const idempotency = { key: randomUUID(), scope: 'projects-create' };
    const first = await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Once' }, idempotency);
    const again = await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Once' }, idempotency);
    expect(again).toEqual({ resource: first.resource, replayed: true });
    expect(await documentsOf(embedded.direct(), principal.tenantId, 'project')).toHaveLength(1);
    expect(await eventsOf(principal.tenantId)).toHaveLength(1);
  });
});

describe('getProject and readProjectDocument', () => {
  it('answer 404 projectNotFound (the id cut to 100 characters) for another tenant’s project, a missing one, one being deleted, a task’s id', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    const deleting = await make(principal);
    await storedChange(principal.tenantId, deleting.id, { deleting: true });
    const task = (await createTask(principal.tenantId, principal.objectId, { projectId: id, title: 'A task' }, undefined)).resource;
    for (const [tenantId, missing] of [
      [adminCaller().tenantId, id],
      [principal.tenantId, 'PRJ-999999'],
      [principal.tenantId, deleting.id],
      [principal.tenantId, task.id],
      [principal.tenantId, `PRJ-${'9'.repeat(150)}`],
    ] as const) {
      const notFound = { refusal: 'notFound', messageKey: 'projectNotFound', params: { id: missing.slice(0, 100) } };
      await expect(getProject({ ...principal, tenantId }.tenantId, missing)).rejects.toMatchObject(notFound);
      await expect(readProjectDocument(tenantId, missing)).rejects.toMatchObject(notFound);
    }
    expect(await readProjectDocument(principal.tenantId, id)).toMatchObject({ id, type: 'project', _etag: expect.any(String) });
  });
});

describe('listProjects', () => {
  it('sorts by name whatever the case, and finds a name by any part of it, whatever the case', async () => {
    const principal = adminCaller();
    const [b, upperC, a] = [await make(principal, { name: 'bravo' }), await make(principal, { name: 'Charlie' }), await make(principal, { name: 'ALPHA' })];
    await make(adminCaller(), { name: 'alpha' });
    const ids = async (query: Partial<ListProjectsQuery>) => (await listProjects(principal.tenantId, listQuery(query))).items.map(({ id }) => id);
    expect(await ids({ sort: 'name' })).toEqual([a.id, b.id, upperC.id]);
    expect(await ids({ sort: '-name' })).toEqual([upperC.id, b.id, a.id]);
    // The query's schema lower-cases `q`.
    expect(await ids({ q: 'arl' })).toEqual([upperC.id]);
    expect(await ids({ q: 'alp' })).toEqual([a.id]);
  });

  it('sorts by creation, newest or oldest first, and filters by status, owner and member', async () => {
    const principal = adminCaller();
    const first = await make(principal, { owner: 'ann@contoso.test' });
    const second = await make(principal, { members: ['ann@contoso.test'] });
    const third = await make(principal);
    await storedChange(principal.tenantId, first.id, { createdAt: '2026-01-01T00:00:00.000Z' });
    await storedChange(principal.tenantId, second.id, { createdAt: '2026-01-02T00:00:00.000Z' });
    await storedChange(principal.tenantId, third.id, { createdAt: '2026-01-03T00:00:00.000Z', status: 'Planning' });
    const ids = async (query: Partial<ListProjectsQuery>) => (await listProjects(principal.tenantId, listQuery(query))).items.map(({ id }) => id);
    expect(await ids({})).toEqual([third.id, second.id, first.id]);
    expect(await ids({ sort: 'createdAt' })).toEqual([first.id, second.id, third.id]);
    expect(await ids({ status: 'Planning' })).toEqual([third.id]);
    expect(await ids({ owner: 'ann@contoso.test' })).toEqual([first.id]);
    expect(await ids({ member: 'ann@contoso.test', sort: 'createdAt' })).toEqual([first.id, second.id]);
    expect(await projectSources.byIds(principal.tenantId, [first.id, 'PRJ-999999'])).toEqual([await getProject(principal.tenantId, first.id)]);
  });
});

describe('updateProject', () => {
  it('replaces the fields given, keeps the others, renames its sort key, and writes project.updated with the project after', async () => {
    const principal = adminCaller();
    const created = await make(principal, { description: 'Kept', members: ['bob@contoso.test'] });
    await storedChange(principal.tenantId, created.id, { updatedAt: '2026-01-01T00:00:00.000Z' });
    const before = Date.now();
    const updated = await updateProject(principal.tenantId, created.id, { name: 'Zeta Renamed' }, undefined);

    expect(updated).toEqual({ ...created, name: 'Zeta Renamed', updatedAt: updated.updatedAt });
    expect(Date.parse(updated.updatedAt)).toBeGreaterThanOrEqual(before);
    expect(await stored(principal.tenantId, created.id)).toMatchObject({ ...updated, nameSort: 'zeta renamed' });
    expect((await eventsOf(principal.tenantId)).slice(1)).toEqual([{ type: 'project.updated', data: updated }]);
  });

  it('keeps the owner among the members, first: a new owner, new members, or both', async () => {
    const principal = adminCaller();
    const { id } = await make(principal, { members: ['bob@contoso.test'] });
    expect((await updateProject(principal.tenantId, id, { owner: 'cat@contoso.test' }, undefined)).members).toEqual([
      'cat@contoso.test',
      'owner@contoso.test',
      'bob@contoso.test',
    ]);
    expect(await updateProject(principal.tenantId, id, { members: ['dan@contoso.test'] }, undefined)).toMatchObject({
      owner: 'cat@contoso.test',
      members: ['cat@contoso.test', 'dan@contoso.test'],
    });
    expect(
      await updateProject(
        principal.tenantId,
        id,
        { owner: 'eve@contoso.test', members: ['eve@contoso.test', 'fay@contoso.test', 'fay@contoso.test'] },
        undefined,
      ),
    ).toMatchObject({ owner: 'eve@contoso.test', members: ['eve@contoso.test', 'fay@contoso.test'] });
    const members = Array.from({ length: 500 }, (_, index) => `m${index}@contoso.test`);
    await expect(updateProject(principal.tenantId, id, { members }, undefined)).rejects.toMatchObject({ refusal: 'invalid', messageKey: 'tooManyMembers' });
  });

  it('moves the status as the contract allows; another move is a 409 naming the allowed ones, that changes nothing and writes no event', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    expect((await updateProject(principal.tenantId, id, { status: 'OnHold' }, undefined)).status).toBe('OnHold');
    expect((await updateProject(principal.tenantId, id, { status: 'OnHold', description: 'Same status' }, undefined)).status).toBe('OnHold');
    const before = (await stored(principal.tenantId, id))!;
    const events = await eventsOf(principal.tenantId);

    await expect(updateProject(principal.tenantId, id, { status: 'Completed' }, undefined)).rejects.toMatchObject({
      refusal: 'conflict',
      messageKey: 'statusMoveNotAllowed',
      params: { from: 'OnHold', to: 'Completed', allowed: 'Active, Archived' },
    });
    expect((await stored(principal.tenantId, id))!._etag).toBe(before._etag);
    expect(await eventsOf(principal.tenantId)).toEqual(events);
  });

  it('writes nothing for a change to what is stored, and writes one that only mends what follows from a field (the name it sorts by)', async () => {
    const principal = adminCaller();
    const read = await make(principal, { name: 'Hooked', members: ['dan@contoso.test'] });
    const before = (await stored(principal.tenantId, read.id))!;
    for (const changes of [{ status: 'Active' as const }, { name: 'Hooked', owner: read.owner, members: ['dan@contoso.test', read.owner] }]) {
      expect(await updateProject(principal.tenantId, read.id, changes, [versionOf(read)]), JSON.stringify(changes)).toEqual(read);
    }
    expect(await stored(principal.tenantId, read.id)).toEqual(before);
    expect((await eventsOf(principal.tenantId)).map(({ type }) => type)).toEqual(['project.created']);

    // Stored before names were sorted lower-cased: the same name is a change to the document, though not to the project shown.
    await storedChange(principal.tenantId, read.id, { nameSort: 'Hooked' });
    const mended = await updateProject(principal.tenantId, read.id, { name: 'Hooked' }, undefined);
    expect(mended).toEqual({ ...read, updatedAt: mended.updatedAt });
    expect(await stored(principal.tenantId, read.id)).toMatchObject({ nameSort: 'hooked', updatedAt: mended.updatedAt });
    expect((await eventsOf(principal.tenantId)).map(({ type }) => type)).toEqual(['project.created', 'project.updated']);
  });

  it('refuses any change to an Archived project, even to the same status, with a 409 projectArchived', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    const archived = await updateProject(principal.tenantId, id, { status: 'Archived' }, undefined);
    expect(archived.status).toBe('Archived');
    const before = (await stored(principal.tenantId, id))!;
    for (const changes of [{ name: 'Renamed' }, { status: 'Active' as const }, { status: 'Archived' as const }]) {
      const refused = updateProject(principal.tenantId, id, changes, undefined);
      await expect(refused).rejects.toBeInstanceOf(RuleError);
      await expect(refused).rejects.toMatchObject({ refusal: 'conflict', messageKey: 'projectArchived', params: { id } });
    }
    expect((await stored(principal.tenantId, id))!._etag).toBe(before._etag);
    expect((await eventsOf(principal.tenantId)).map(({ type }) => type)).toEqual(['project.created', 'project.updated']);
  });

  it('honours If-Match: the version read changes it, a stale one is a 412 that changes nothing', async () => {
    const principal = adminCaller();
    const read = await make(principal);
    const changed = await updateProject(principal.tenantId, read.id, { description: 'First' }, [versionOf(read)]);
    await expect(updateProject(principal.tenantId, read.id, { description: 'Second' }, [versionOf(read)])).rejects.toMatchObject({
      refusal: 'stale',
      messageKey: 'preconditionFailed',
    });
    expect(await getProject(principal.tenantId, read.id)).toEqual(changed);
    expect(await updateProject(principal.tenantId, read.id, { description: 'Third' }, '*')).toMatchObject({ description: 'Third' });
  });

  it('answers 404 for another tenant’s project, a missing one and one being deleted, and changes nothing', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    await expect(updateProject(adminCaller().tenantId, id, { name: 'Theirs' }, undefined)).rejects.toMatchObject({
      refusal: 'notFound',
      messageKey: 'projectNotFound',
    });
    await expect(updateProject(principal.tenantId, 'PRJ-999999', { name: 'None' }, undefined)).rejects.toMatchObject({
      refusal: 'notFound',
      messageKey: 'projectNotFound',
    });
    await storedChange(principal.tenantId, id, { deleting: true });
    await expect(updateProject(principal.tenantId, id, { name: 'Going' }, undefined)).rejects.toMatchObject({
      refusal: 'notFound',
      messageKey: 'projectNotFound',
    });
    expect((await stored(principal.tenantId, id))!.name).toBe('Apollo');
  });
});

describe('a project change racing its tasks’ writes', () => {
  it('is made again over what they wrote, and loses nothing', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    // A task is written between the project's read and its write: the guard it passed changed the project's document.
    meanwhile(batchWith('"name":"Renamed"'), () => createTask(principal.tenantId, principal.objectId, { projectId: id, title: 'Meanwhile' }, undefined));
    expect(await updateProject(principal.tenantId, id, { name: 'Renamed' }, undefined)).toMatchObject({ name: 'Renamed' });
    expect(await stored(principal.tenantId, id)).toMatchObject({ name: 'Renamed', nameSort: 'renamed' });
    expect(await taskIdsOf(principal.tenantId)).toEqual(['TSK-1001']);
  });
});

describe('deleteProject', () => {
  it('removes the project and its tasks, none of another project or tenant, and writes one project.deleted counting them', async () => {
    const principal = adminCaller();
    const { tenantId } = principal;
    const [doomed, kept] = [await make(principal), await make(principal)];
    for (const project of [doomed, doomed, doomed, kept])
      await createTask(principal.tenantId, principal.objectId, { projectId: project.id, title: 'Work' }, undefined);
    const stranger = adminCaller();
    const theirs = await make(stranger);
    await createTask(stranger.tenantId, stranger.objectId, { projectId: theirs.id, title: 'Theirs' }, undefined);
    const events = (await eventsOf(tenantId)).length;

    await deleteProject(principal.tenantId, doomed.id, undefined);

    expect(await stored(tenantId, doomed.id)).toBeUndefined();
    expect(await taskIdsOf(tenantId)).toEqual(['TSK-1004']);
    expect(await taskIdsOf(stranger.tenantId)).toEqual(['TSK-1001']);
    expect(await getProject(principal.tenantId, kept.id)).toEqual(kept);
    expect((await eventsOf(tenantId)).slice(events)).toEqual([{ type: 'project.deleted', data: { id: doomed.id, deletedTasks: 3 } }]);
    await expect(deleteProject(principal.tenantId, doomed.id, undefined)).rejects.toMatchObject({
      refusal: 'notFound',
      messageKey: 'projectNotFound',
      params: { id: doomed.id },
    });
  });

  it('deletes an Archived project, and one without tasks (deletedTasks 0)', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    await updateProject(principal.tenantId, id, { status: 'Archived' }, undefined);
    await deleteProject(principal.tenantId, id, undefined);
    expect(await stored(principal.tenantId, id)).toBeUndefined();
    expect((await eventsOf(principal.tenantId)).at(-1)).toEqual({ type: 'project.deleted', data: { id, deletedTasks: 0 } });
  });

  it('honours If-Match: a stale version is a 412 that deletes nothing and hides nothing; the current one deletes', async () => {
    const principal = adminCaller();
    const read = await make(principal);
    await createTask(principal.tenantId, principal.objectId, { projectId: read.id, title: 'Stays' }, undefined);
    const current = await updateProject(principal.tenantId, read.id, { description: 'Changed' }, undefined);

    await expect(deleteProject(principal.tenantId, read.id, [versionOf(read)])).rejects.toMatchObject({ refusal: 'stale', messageKey: 'preconditionFailed' });
    expect(await getProject(principal.tenantId, read.id)).toEqual(current);
    expect(await taskIdsOf(principal.tenantId)).toHaveLength(1);

    await deleteProject(principal.tenantId, read.id, [versionOf(current)]);
    expect(await stored(principal.tenantId, read.id)).toBeUndefined();
    expect(await taskIdsOf(principal.tenantId)).toEqual([]);
  });

  it('answers 404 for another tenant’s project, a missing one and a task’s id, and deletes nothing', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    const task = (await createTask(principal.tenantId, principal.objectId, { projectId: id, title: 'Stays' }, undefined)).resource;
    for (const [caller, missing] of [
      [adminCaller(), id],
      [principal, 'PRJ-999999'],
      [principal, task.id],
    ] as const) {
      await expect(deleteProject(caller.tenantId, missing, undefined)).rejects.toMatchObject({
        refusal: 'notFound',
        messageKey: 'projectNotFound',
        params: { id: missing },
      });
    }
    expect(await stored(principal.tenantId, id)).toBeDefined();
    expect(await taskIdsOf(principal.tenantId)).toEqual([task.id]);
  });

  it('finishes a delete that stopped half way (the project hidden, tasks left), whatever version is asked', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    await createTask(principal.tenantId, principal.objectId, { projectId: id, title: 'Left' }, undefined);
    await storedChange(principal.tenantId, id, { deleting: true });

    await deleteProject(principal.tenantId, id, ['a-version-nobody-has']);
    expect(await stored(principal.tenantId, id)).toBeUndefined();
    expect(await taskIdsOf(principal.tenantId)).toEqual([]);
    expect((await eventsOf(principal.tenantId)).at(-1)).toEqual({ type: 'project.deleted', data: { id, deletedTasks: 1 } });
  });

  it('marks the project again when another instance changed it after the first read', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    meanwhile(batchWith('"deleting":true'), () => storedChange(principal.tenantId, id, { description: 'Changed elsewhere' }));
    await deleteProject(principal.tenantId, id, undefined);
    expect(await stored(principal.tenantId, id)).toBeUndefined();
  });

  it('is a 412 when another instance changed the project after the version asked was read', async () => {
    const principal = adminCaller();
    const read = await make(principal);
    meanwhile(batchWith('"deleting":true'), () => storedChange(principal.tenantId, read.id, { name: 'Renamed elsewhere' }));
    await expect(deleteProject(principal.tenantId, read.id, [versionOf(read)])).rejects.toMatchObject({ refusal: 'stale' });
    expect(await stored(principal.tenantId, read.id)).toMatchObject({ name: 'Renamed elsewhere' });
    expect((await stored(principal.tenantId, read.id))!.deleting).toBeUndefined();
  });

  it('of two at once, writes one event; the one that finds the project gone meanwhile does not fail', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    await createTask(principal.tenantId, principal.objectId, { projectId: id, title: 'Work' }, undefined);
    meanwhile(isProjectDelete(id), () => deleteProject(principal.tenantId, id, undefined));
    await deleteProject(principal.tenantId, id, undefined);
    expect(await stored(principal.tenantId, id)).toBeUndefined();
    // The event counts the task, though the delete that wrote it removed none: the other one's sweep took it.
    expect(await deletedEventsOf(principal.tenantId)).toEqual([{ type: 'project.deleted', data: { id, deletedTasks: 1 } }]);
    expect(await taskIdsOf(principal.tenantId)).toEqual([]);
  });

  it('of two at once, each removing some of the tasks, writes one event that counts them all', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    for (let number = 1; number <= 130; number++) await taskElsewhere(principal.tenantId, id, 2000 + number);
    // After the first one's first sweep batch, the second one runs from start to end.
    meanwhile(secondSweep(), () => deleteProject(principal.tenantId, id, undefined));
    await deleteProject(principal.tenantId, id, undefined);
    expect(await stored(principal.tenantId, id)).toBeUndefined();
    expect(await taskIdsOf(principal.tenantId)).toEqual([]);
    expect(await deletedEventsOf(principal.tenantId)).toEqual([{ type: 'project.deleted', data: { id, deletedTasks: 130 } }]);
  });

  it('counts the tasks removed by a DELETE that stopped after its first sweep batch in the event of the one that finishes it', async () => {
    const principal = adminCaller();
    const project = await make(principal);
    for (let number = 1; number <= 130; number++) await taskElsewhere(principal.tenantId, project.id, 2000 + number);
    const interrupt = secondSweep();
    embedded.store.intercept = (record) => (interrupt(record) ? REFUSED_BATCH : undefined);
    await expect(deleteProject(principal.tenantId, project.id, undefined)).rejects.toThrow(/answered 503/);
    embedded.store.intercept = undefined;
    const left = await taskIdsOf(principal.tenantId);
    expect(left.length).toBeGreaterThan(0);
    expect(left.length).toBeLessThan(130);
    // The count kept on the project while it is deleted is not part of it: what it shows, and so its version, is as before.
    const halfDeleted = (await stored(principal.tenantId, project.id))!;
    expect(halfDeleted.deleting).toBe(true);
    expect(projects.resourceOf(halfDeleted)).toEqual(project);
    expect(versionOf(projects.resourceOf(halfDeleted))).toBe(versionOf(project));

    await deleteProject(principal.tenantId, project.id, undefined);
    expect(await stored(principal.tenantId, project.id)).toBeUndefined();
    expect(await taskIdsOf(principal.tenantId)).toEqual([]);
    expect(await deletedEventsOf(principal.tenantId)).toEqual([{ type: 'project.deleted', data: { id: project.id, deletedTasks: 130 } }]);
  });

  it('reads the count again when another DELETE’s sweep removed tasks between its read of the project and its delete', async () => {
    const principal = adminCaller();
    const { tenantId } = principal;
    const { id } = await make(principal);
    for (let index = 0; index < 3; index++) await createTask(principal.tenantId, principal.objectId, { projectId: id, title: 'Work' }, undefined);
    // Once the first one has read the count, a task slips in, and another DELETE sweeps it and stops before its own delete.
    meanwhile(isProjectDelete(id), async () => {
      await taskElsewhere(tenantId, id, 5001);
      embedded.store.intercept = (record) => (isProjectDelete(id)(record) ? REFUSED_BATCH : undefined);
      await expect(deleteProject(principal.tenantId, id, undefined)).rejects.toMatchObject({ code: 503 });
      embedded.store.intercept = undefined;
    });
    await deleteProject(principal.tenantId, id, undefined);
    expect(await stored(tenantId, id)).toBeUndefined();
    expect(await taskIdsOf(tenantId)).toEqual([]);
    expect(await deletedEventsOf(tenantId)).toEqual([{ type: 'project.deleted', data: { id, deletedTasks: 4 } }]);
  });

  it('removes a task another instance created while the delete ran, and sends no task.deleted', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    // Between the first sweep and the project's own delete, another instance adds a task that passed its guard.
    meanwhile(isProjectDelete(id), () => taskElsewhere(principal.tenantId, id, 5001));
    await deleteProject(principal.tenantId, id, undefined);
    expect(await taskIdsOf(principal.tenantId)).toEqual([]);
    expect((await eventsOf(principal.tenantId)).map(({ type }) => type)).toEqual(['project.created', 'project.deleted']);
  });

  it('removes more tasks than one batch holds, finding them in the tenant’s partition', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    for (let number = 1; number <= 130; number++) await taskElsewhere(principal.tenantId, id, 2000 + number);
    const from = embedded.store.requests.length;
    await deleteProject(principal.tenantId, id, undefined);
    const queries = embedded.store.requests.slice(from).filter((request) => request.isQuery);
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) expect(query.partitionKey).toBe(JSON.stringify([principal.tenantId]));
    expect(await taskIdsOf(principal.tenantId)).toEqual([]);
    expect((await eventsOf(principal.tenantId)).at(-1)).toEqual({ type: 'project.deleted', data: { id, deletedTasks: 130 } });
  });

  it('fails when the store answers the project’s delete without a result, and does not take that for a success', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    embedded.store.intercept = (record) => (isProjectDelete(id)(record) ? { status: 200, body: [] } : undefined);
    await expect(deleteProject(principal.tenantId, id, undefined)).rejects.toThrow(/^Deleting a project failed: $/);
    embedded.store.intercept = undefined;
    expect(await stored(principal.tenantId, id)).toMatchObject({ deleting: true });
  });

  it('fails, naming the statuses, when the store refuses the project’s delete, and leaves the project hidden for the next DELETE', async () => {
    const principal = adminCaller();
    const { id } = await make(principal);
    embedded.store.intercept = (record) =>
      isProjectDelete(id)(record)
        ? {
            status: 207,
            body: [
              { statusCode: 503, requestCharge: 0 },
              { statusCode: 424, requestCharge: 0 },
            ],
          }
        : undefined;
    await expect(deleteProject(principal.tenantId, id, undefined)).rejects.toMatchObject({ message: 'Deleting a project failed: 503,424', code: 503 });
    embedded.store.intercept = undefined;
    expect(await stored(principal.tenantId, id)).toMatchObject({ deleting: true });
    await expect(getProject(principal.tenantId, id)).rejects.toMatchObject({ refusal: 'notFound' });
    await deleteProject(principal.tenantId, id, undefined);
    expect(await stored(principal.tenantId, id)).toBeUndefined();
  });
});
