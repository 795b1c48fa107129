/**
 * Tasks (shared/data/tasks-repository.ts), in process, against the embedded Cosmos store of the local
 * stack started by this file: the readable ids and defaults, a task only in a project of the caller's
 * tenant that is there and not Archived (also when the project changes between the check and the
 * write), the list's filters and sorts, If-Match, and the event each change writes. The app reaches
 * the store through a proxy (test/support/cosmos-proxy.ts) that can hold a request while another
 * instance, which goes to the store directly, writes first.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../shared/auth/principal.js';
import { versionOf } from '../../../shared/domain/versions.js';
import { RuleError } from '../../../shared/domain/errors.js';
import type { EventDocument } from '../../../shared/data/events.js';
import { createProject, updateProject, type ProjectDocument } from '../../../shared/data/projects-repository.js';
import { createTask, deleteTask, getTask, listTasks, taskDocument, taskSources, updateTask } from '../../../shared/data/tasks-repository.js';
import type { CreateTaskBody, ListTasksQuery, Task } from '../../../shared/schemas/tasks.js';
import { beforeRequest, isBatch, type CosmosRequestRecord } from '../../support/cosmos-proxy.js';
import { documentsOf, embeddedStoreForTests } from '../../support/embedded-store.js';
import { adminCaller } from '../../support/principals.js';

const embedded = embeddedStoreForTests();

async function stored<T extends object = Task & { priorityRank: number; _etag: string }>(tenantId: string, id: string): Promise<T | undefined> {
  const { resource } = await embedded.direct().item(id, tenantId).read<T>();
  return resource;
}

/** Changes a stored document as another writer (another instance, or time passing) would. */
async function storedChange<T extends object>(tenantId: string, id: string, fields: Partial<T>): Promise<void> {
  const current = (await stored<T>(tenantId, id))!;
  await embedded
    .direct()
    .item(id, tenantId)
    .replace({ ...current, ...fields });
}

/** The tenant's events, as `type: data`, oldest first. */
async function eventsOf(tenantId: string): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const events = await documentsOf<EventDocument>(embedded.direct(), tenantId, 'event');
  return events.sort((a, b) => a.timestamp.localeCompare(b.timestamp)).map(({ eventType, data }) => ({ type: eventType, data }));
}

const taskEvents = async (tenantId: string) => (await eventsOf(tenantId)).filter(({ type }) => type.startsWith('task.'));
const tasksOf = (tenantId: string) => documentsOf<Task>(embedded.direct(), tenantId, 'task');

async function projectOf(principal: Principal): Promise<string> {
  return (await createProject(principal.tenantId, principal.objectId, principal.email!, { name: 'Apollo' }, undefined)).resource.id;
}

async function make(principal: Principal, projectId: string, body: Partial<CreateTaskBody> = {}): Promise<Task> {
  return (await createTask(principal.tenantId, principal.objectId, { projectId, title: 'Write the plan', ...body }, undefined)).resource;
}

/** A transactional batch that writes the tenant's tasks. */
const isTaskBatch = (tenantId: string) => (record: CosmosRequestRecord) =>
  isBatch(record) && record.body.includes(tenantId) && record.body.includes('"type":"task"');

/** The batch of a task's delete (its event names the task). */
const isTaskDelete = (tenantId: string) => (record: CosmosRequestRecord) =>
  isBatch(record) && record.body.includes(tenantId) && record.body.includes('task.deleted');
const archivedElsewhere = (tenantId: string, projectId: string) => storedChange<ProjectDocument>(tenantId, projectId, { status: 'Archived' });
const removedElsewhere = (tenantId: string, projectId: string) => embedded.direct().item(projectId, tenantId).delete();
/** A project delete's first step: the project marked, hidden from readers. */
const markedElsewhere = (tenantId: string, projectId: string) => storedChange<ProjectDocument>(tenantId, projectId, { deleting: true });

/** Has another instance make `write` when the request `matches` reaches the store: after this instance's checks, before its write. */
function meanwhile(matches: (record: CosmosRequestRecord) => boolean, write: () => Promise<unknown>): void {
  beforeRequest(embedded.store, matches, async () => void (await write()));
}

/** Neither a task of the tenant nor a task event is stored. */
async function expectNoTaskStored(tenantId: string): Promise<void> {
  expect(await tasksOf(tenantId)).toEqual([]);
  expect(await taskEvents(tenantId)).toEqual([]);
}

const listQuery = (query: Partial<ListTasksQuery> = {}): ListTasksQuery => ({ sort: '-createdAt', limit: 50, cursor: undefined, ...query });

describe('createTask', () => {
  it('answers the task, Todo and Medium with no assignee or due date, in its project; stores its rank; writes task.created', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const before = Date.now();
    const { resource, replayed } = await createTask(principal.tenantId, principal.objectId, { projectId, title: 'Write the plan' }, undefined);
    const after = Date.now();

    expect(replayed).toBe(false);
    expect(resource).toEqual({
      id: 'TSK-1001',
      projectId,
      title: 'Write the plan',
      description: '',
      status: 'Todo',
      priority: 'Medium',
      assignee: null,
      dueDate: null,
      createdAt: resource.createdAt,
      updatedAt: resource.createdAt,
      createdBy: principal.objectId,
    });
    expect(Object.keys(resource)).toEqual([
      'id',
      'projectId',
      'title',
      'description',
      'status',
      'priority',
      'assignee',
      'dueDate',
      'createdAt',
      'updatedAt',
      'createdBy',
    ]);
    expect(Date.parse(resource.createdAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(resource.createdAt)).toBeLessThanOrEqual(after);
    expect(await stored(principal.tenantId, resource.id)).toMatchObject({ ...resource, tenantId: principal.tenantId, type: 'task', priorityRank: 2 });
    expect(await getTask(principal.tenantId, resource.id)).toEqual(resource);
    expect(await taskEvents(principal.tenantId)).toEqual([{ type: 'task.created', data: resource }]);
  });

  it('keeps the fields given, ranks the priority, and numbers the tenant’s tasks from 1001, each tenant its own', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const given = { description: 'All of it', status: 'Blocked', priority: 'Urgent', assignee: 'ann@contoso.test', dueDate: '2026-12-24' } as const;
    const task = await make(principal, projectId, given);
    expect(task).toMatchObject({ id: 'TSK-1001', ...given });
    expect(await stored(principal.tenantId, task.id)).toMatchObject({ priorityRank: 4 });
    expect((await make(principal, projectId, { priority: 'Low' })).id).toBe('TSK-1002');
    expect(await stored(principal.tenantId, 'TSK-1002')).toMatchObject({ priorityRank: 1 });
    const stranger = adminCaller();
    expect((await make(stranger, await projectOf(stranger))).id).toBe('TSK-1001');
    // The sequence's name is what keeps an id from being handed out twice, across versions of the app.
    expect(await stored<object>(principal.tenantId, 'sequence-tasks')).toMatchObject({ type: 'sequence' });
  });

  it('makes the document with the time given, for the bench and the tests that seed tasks', () => {
    expect(taskDocument('tenant', 7, { projectId: 'PRJ-1', title: 'Seeded', priority: 'High' }, 'oid', '2026-01-01T00:00:00.000Z')).toEqual({
      ...{ id: 'TSK-7', tenantId: 'tenant', type: 'task', projectId: 'PRJ-1', title: 'Seeded', description: '', status: 'Todo' },
      ...{ priority: 'High', priorityRank: 3, assignee: null, dueDate: null },
      ...{ createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', createdBy: 'oid' },
    });
  });

  it('answers 404 projectNotFound for another tenant’s project, a missing one and one being deleted; 409 for an Archived one; stores nothing', async () => {
    const principal = adminCaller();
    const [archived, deleting] = [await projectOf(principal), await projectOf(principal)];
    await updateProject(principal.tenantId, archived, { status: 'Archived' }, undefined);
    await storedChange<ProjectDocument>(principal.tenantId, deleting, { deleting: true });
    // Another tenant's project, under an id this tenant does not have.
    const stranger = adminCaller();
    await Promise.all([projectOf(stranger), projectOf(stranger)]);
    const theirs = await projectOf(stranger);

    for (const projectId of [theirs, 'PRJ-999999', deleting]) {
      await expect(make(principal, projectId)).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'projectNotFound', params: { id: projectId } });
    }
    const refused = make(principal, archived);
    await expect(refused).rejects.toBeInstanceOf(RuleError);
    await expect(refused).rejects.toMatchObject({ refusal: 'conflict', messageKey: 'projectArchived', params: { id: archived } });
    await expectNoTaskStored(principal.tenantId);
  });

  // Another instance changes the project after the create checked it and before the create commits.
  it.each([
    ['removed by a delete', 'notFound', 'projectNotFound', removedElsewhere],
    ['marked by a delete', 'notFound', 'projectNotFound', markedElsewhere],
    ['archived', 'conflict', 'projectArchived', archivedElsewhere],
  ] as const)('adds nothing to a project %s between the check and the write: %s', async (_, refusal, messageKey, elsewhere) => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    meanwhile(isTaskBatch(principal.tenantId), () => elsewhere(principal.tenantId, projectId));
    await expect(make(principal, projectId)).rejects.toMatchObject({ refusal, messageKey });
    await expectNoTaskStored(principal.tenantId);
  });

  it('answers a repeated Idempotency-Key with the first result and makes one task', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const idempotency = { key: randomUUID(), scope: 'tasks-create' };
    const body = { projectId, title: 'Once' };
    const first = await createTask(principal.tenantId, principal.objectId, body, idempotency);
    expect(await createTask(principal.tenantId, principal.objectId, body, idempotency)).toEqual({ resource: first.resource, replayed: true });
    expect(await tasksOf(principal.tenantId)).toHaveLength(1);
  });
});

describe('getTask and taskSources.byIds', () => {
  it('show the caller’s tenant’s tasks only: another tenant’s, a missing one and a project’s id are 404 taskNotFound', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const task = await make(principal, projectId);
    for (const [tenantId, missing] of [
      [adminCaller().tenantId, task.id],
      [principal.tenantId, 'TSK-999999'],
      [principal.tenantId, projectId],
    ] as const) {
      await expect(getTask({ ...principal, tenantId }.tenantId, missing)).rejects.toMatchObject({
        refusal: 'notFound',
        messageKey: 'taskNotFound',
        params: { id: missing },
      });
    }
    const long = `TSK-${'9'.repeat(150)}`;
    await expect(getTask(principal.tenantId, long)).rejects.toMatchObject({ refusal: 'notFound', params: { id: long.slice(0, 100) } });
    expect(await taskSources.byIds(principal.tenantId, [task.id, 'TSK-999999'])).toEqual([task]);
    expect(await taskSources.byIds(adminCaller().tenantId, [task.id])).toEqual([]);
    expect(await taskSources.idPage(principal.tenantId, [projectId], 10, undefined)).toEqual({ ids: [task.id], continuation: undefined });
  });
});

describe('listTasks', () => {
  /** Tasks of two projects, with set creation times; another tenant's task with the same fields. */
  async function someTasks() {
    const principal = adminCaller();
    const [one, two] = [await projectOf(principal), await projectOf(principal)];
    const low = await make(principal, one, { priority: 'Low', dueDate: '2026-03-01', assignee: 'ann@contoso.test' });
    const urgent = await make(principal, one, { priority: 'Urgent', dueDate: '2026-03-02', status: 'Done' });
    const high = await make(principal, two, { priority: 'High', assignee: 'ann@contoso.test' });
    const medium = await make(principal, two, { priority: 'Medium', dueDate: '2026-02-28' });
    for (const [index, task] of [low, urgent, high, medium].entries()) {
      await storedChange(principal.tenantId, task.id, { createdAt: `2026-01-0${index + 1}T00:00:00.000Z` });
    }
    const stranger = adminCaller();
    await make(stranger, await projectOf(stranger), { priority: 'Low', dueDate: '2026-01-01', assignee: 'ann@contoso.test' });
    const ids = async (query: Partial<ListTasksQuery>) => (await listTasks(principal.tenantId, listQuery(query))).items.map(({ id }) => id);
    return { ids, one, two, low: low.id, urgent: urgent.id, high: high.id, medium: medium.id };
  }

  it('sorts by priority’s rank (Low < Medium < High < Urgent), not its spelling, and by creation', async () => {
    const { ids, low, urgent, high, medium } = await someTasks();
    expect(await ids({ sort: 'priority' })).toEqual([low, medium, high, urgent]);
    expect(await ids({ sort: '-priority' })).toEqual([urgent, high, medium, low]);
    expect(await ids({ sort: 'createdAt' })).toEqual([low, urgent, high, medium]);
    expect(await ids({})).toEqual([medium, high, urgent, low]);
  });

  it('sorts by due date, a task with none first (last with -dueDate)', async () => {
    const { ids, low, urgent, high, medium } = await someTasks();
    expect(await ids({ sort: 'dueDate' })).toEqual([high, medium, low, urgent]);
    expect(await ids({ sort: '-dueDate' })).toEqual([urgent, low, medium, high]);
  });

  it('finds the tasks due strictly before a date; one with no due date never is', async () => {
    const { ids, low, medium } = await someTasks();
    expect(await ids({ dueBefore: '2026-03-02', sort: 'dueDate' })).toEqual([medium, low]);
    expect(await ids({ dueBefore: '2026-03-01' })).toEqual([medium]);
    expect(await ids({ dueBefore: '2026-02-28' })).toEqual([]);
    expect(await ids({ dueBefore: '9999-12-31', sort: 'dueDate' })).toHaveLength(3);
  });

  it('filters by project, status and assignee, each alone and together', async () => {
    const { ids, one, two, low, urgent, high, medium } = await someTasks();
    expect(await ids({ projectId: one, sort: 'createdAt' })).toEqual([low, urgent]);
    expect(await ids({ projectId: two, sort: 'createdAt' })).toEqual([high, medium]);
    expect(await ids({ status: 'Done' })).toEqual([urgent]);
    expect(await ids({ assignee: 'ann@contoso.test', sort: 'createdAt' })).toEqual([low, high]);
    expect(await ids({ projectId: two, assignee: 'ann@contoso.test' })).toEqual([high]);
    expect(await ids({ projectId: 'PRJ-999999' })).toEqual([]);
  });
});

describe('updateTask', () => {
  it('replaces the fields given, keeps the others and the project, and writes task.updated with the task after', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const created = await make(principal, projectId, { priority: 'High', assignee: 'ann@contoso.test', dueDate: '2026-05-01' });
    await storedChange(principal.tenantId, created.id, { updatedAt: '2026-01-01T00:00:00.000Z' });
    const before = Date.now();
    const updated = await updateTask(principal.tenantId, created.id, { title: 'Rewritten', status: 'InProgress', dueDate: null }, undefined);

    expect(updated).toEqual({ ...created, title: 'Rewritten', status: 'InProgress', dueDate: null, updatedAt: updated.updatedAt });
    expect(Date.parse(updated.updatedAt)).toBeGreaterThanOrEqual(before);
    expect(await stored(principal.tenantId, created.id)).toMatchObject({ ...updated, priorityRank: 3 });
    expect((await taskEvents(principal.tenantId)).slice(1)).toEqual([{ type: 'task.updated', data: updated }]);
  });

  it('ranks a new priority', async () => {
    const principal = adminCaller();
    const { id } = await make(principal, await projectOf(principal));
    expect((await updateTask(principal.tenantId, id, { priority: 'Urgent' }, undefined)).priority).toBe('Urgent');
    expect(await stored(principal.tenantId, id)).toMatchObject({ priority: 'Urgent', priorityRank: 4 });
  });

  it('refuses any change to a task of an Archived project with a 409 naming the project, and writes no event', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const { id } = await make(principal, projectId);
    await updateProject(principal.tenantId, projectId, { status: 'Archived' }, undefined);
    const before = (await stored(principal.tenantId, id))!;
    await expect(updateTask(principal.tenantId, id, { title: 'Too late' }, undefined)).rejects.toMatchObject({
      refusal: 'conflict',
      messageKey: 'projectArchived',
      params: { id: projectId },
    });
    expect((await stored(principal.tenantId, id))!._etag).toBe(before._etag);
    expect((await taskEvents(principal.tenantId)).map(({ type }) => type)).toEqual(['task.created']);
  });

  it('honours If-Match: the version read changes it, a stale one is a 412 that changes nothing', async () => {
    const principal = adminCaller();
    const read = await make(principal, await projectOf(principal));
    const changed = await updateTask(principal.tenantId, read.id, { title: 'First' }, [versionOf(read)]);
    await expect(updateTask(principal.tenantId, read.id, { title: 'Second' }, [versionOf(read)])).rejects.toMatchObject({
      refusal: 'stale',
      messageKey: 'preconditionFailed',
    });
    expect(await getTask(principal.tenantId, read.id)).toEqual(changed);
  });

  it('is made again over what another instance changed meanwhile, losing neither', async () => {
    const principal = adminCaller();
    const { id } = await make(principal, await projectOf(principal));
    meanwhile(isTaskBatch(principal.tenantId), () => storedChange<Task>(principal.tenantId, id, { description: 'Elsewhere' }));
    expect(await updateTask(principal.tenantId, id, { title: 'Mine' }, undefined)).toMatchObject({ title: 'Mine', description: 'Elsewhere' });
    expect(await stored(principal.tenantId, id)).toMatchObject({ title: 'Mine', description: 'Elsewhere' });
  });

  // Another instance changes the project after the change checked it and before the change commits.
  it.each([
    ['removed by a delete', 'notFound', 'projectNotFound', removedElsewhere],
    ['archived', 'conflict', 'projectArchived', archivedElsewhere],
  ] as const)('changes no task of a project %s between the check and the write: %s', async (_, refusal, messageKey, elsewhere) => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const { id } = await make(principal, projectId);
    meanwhile(isTaskBatch(principal.tenantId), () => elsewhere(principal.tenantId, projectId));
    await expect(updateTask(principal.tenantId, id, { title: 'Too late' }, undefined)).rejects.toMatchObject({ refusal, messageKey });
    expect((await stored(principal.tenantId, id))!.title).toBe('Write the plan');
    expect((await taskEvents(principal.tenantId)).map(({ type }) => type)).toEqual(['task.created']);
  });

  it('answers 404 taskNotFound for another tenant’s task and a missing one, and changes nothing', async () => {
    const principal = adminCaller();
    const { id } = await make(principal, await projectOf(principal));
    await expect(updateTask(adminCaller().tenantId, id, { title: 'Theirs' }, undefined)).rejects.toMatchObject({
      refusal: 'notFound',
      messageKey: 'taskNotFound',
    });
    await expect(updateTask(principal.tenantId, 'TSK-999999', { title: 'None' }, undefined)).rejects.toMatchObject({
      refusal: 'notFound',
      messageKey: 'taskNotFound',
    });
    expect((await stored(principal.tenantId, id))!.title).toBe('Write the plan');
  });
});

describe('deleteTask', () => {
  it('removes the task and writes task.deleted naming it and its project', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const { id } = await make(principal, projectId);
    await deleteTask(principal.tenantId, id, undefined);
    expect(await stored(principal.tenantId, id)).toBeUndefined();
    expect((await taskEvents(principal.tenantId)).at(-1)).toEqual({ type: 'task.deleted', data: { id, projectId } });
    await expect(deleteTask(principal.tenantId, id, undefined)).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'taskNotFound' });
  });

  it('keeps a task of an Archived project: 409', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const { id } = await make(principal, projectId);
    await updateProject(principal.tenantId, projectId, { status: 'Archived' }, undefined);
    await expect(deleteTask(principal.tenantId, id, undefined)).rejects.toMatchObject({ refusal: 'conflict', messageKey: 'projectArchived' });
    expect(await stored(principal.tenantId, id)).toBeDefined();
  });

  it('honours If-Match, and answers 404 for another tenant’s task', async () => {
    const principal = adminCaller();
    const read = await make(principal, await projectOf(principal));
    const current = await updateTask(principal.tenantId, read.id, { title: 'Changed' }, undefined);
    await expect(deleteTask(principal.tenantId, read.id, [versionOf(read)])).rejects.toMatchObject({ refusal: 'stale' });
    await expect(deleteTask(adminCaller().tenantId, read.id, undefined)).rejects.toMatchObject({ refusal: 'notFound', messageKey: 'taskNotFound' });
    expect(await stored(principal.tenantId, read.id)).toBeDefined();
    await deleteTask(principal.tenantId, read.id, [versionOf(current)]);
    expect(await stored(principal.tenantId, read.id)).toBeUndefined();
  });
});

describe('a task write racing the archiving of its project', () => {
  // Another instance archives the project after the write checked it and before the write commits.
  it('does not delete the task: 409', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const { id } = await make(principal, projectId);
    meanwhile(isTaskDelete(principal.tenantId), () => archivedElsewhere(principal.tenantId, projectId));
    await expect(deleteTask(principal.tenantId, id, undefined)).rejects.toMatchObject({ refusal: 'conflict', messageKey: 'projectArchived' });
    expect(await stored(principal.tenantId, id)).toBeDefined();
  });

  it('goes through when the project changed otherwise: guarded writes wait for no one', async () => {
    const principal = adminCaller();
    const projectId = await projectOf(principal);
    const { id } = await make(principal, projectId);
    meanwhile(isTaskBatch(principal.tenantId), () => storedChange<ProjectDocument>(principal.tenantId, projectId, { name: 'Renamed' }));
    expect(await updateTask(principal.tenantId, id, { title: 'Still fine' }, undefined)).toMatchObject({ title: 'Still fine' });
    const batches = embedded.store.requests.filter(isTaskBatch(principal.tenantId));
    expect(await Promise.all([make(principal, projectId), make(principal, projectId), make(principal, projectId)])).toHaveLength(3);
    // Three creates at once, each in one batch: none clashed with another.
    expect(embedded.store.requests.filter(isTaskBatch(principal.tenantId)).length - batches.length).toBe(3);
    // The guard is a patch of the project that counts the writes it guarded: one create, one change, three creates.
    expect(await stored<object>(principal.tenantId, projectId)).toMatchObject({ name: 'Renamed', guardedWrites: 5 });
  });
});
