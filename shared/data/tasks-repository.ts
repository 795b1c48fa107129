import { assertWritable } from '../domain/projects.js';
import { priorityRank, TASK_DEFAULTS } from '../domain/tasks.js';
import type { ExpectedVersion } from '../domain/versions.js';
import { notFound } from '../domain/errors.js';
import { task, type CreateTaskBody, type ListTasksQuery, type Task, type UpdateTaskBody } from '../schemas/tasks.js';
import type { Idempotency } from './idempotency.js';
import type { Page } from './paging.js';
import { readProjectDocument, stillWritable, type ProjectDocument } from './projects-repository.js';
import { changeDocument, createDocument, fieldsOf, readVisible, REMOVE, type Created, type DocumentKind } from './tenant-data.js';
import type { NewEvent } from './events.js';
import { indexSources, listPage, sortOrder, type ListFilters, type SortPaths } from './tenant-queries.js';

interface TaskDocument extends Task {
  tenantId: string;
  type: 'task';
  /** The priority's rank: sorting by priority follows it. */
  priorityRank: number;
  _etag: string;
}

export const tasks: DocumentKind<TaskDocument, Task> = {
  type: 'task',
  resourceOf: fieldsOf(task),
  missing: (id) => notFound('taskNotFound', { id: id.slice(0, 100) }),
};

/** A project whose tasks may change: present (404 otherwise) and writable (409 otherwise). */
async function writableProject(tenantId: string, projectId: string): Promise<ProjectDocument> {
  const project = await readProjectDocument(tenantId, projectId);
  assertWritable(project);
  return project;
}

/**
 * Creates a task in a project that exists and is not Archived. The project guards the create in the
 * same transactional batch: once it is Archived, or a delete has marked it, no task can be added to it,
 * and the delete's last sweep removes any task that was added while it ran.
 */
export async function createTask(tenantId: string, actor: string, input: CreateTaskBody, idempotency: Idempotency | undefined): Promise<Created<Task>> {
  return createDocument<Omit<TaskDocument, '_etag'>, Task, ProjectDocument>({
    kind: tasks,
    tenantId,
    actor,
    idempotency,
    request: input,
    sequence: 'tasks',
    event: (created) => ({ type: 'task.created', data: created }),
    check: () => writableProject(tenantId, input.projectId),
    prepare(number, project) {
      return { document: taskDocument(tenantId, number, input, actor), guard: stillWritable(project) };
    },
  });
}

/** The document a create writes for task number `number` (the bench and the tests seed tasks with it too). */
export function taskDocument(
  tenantId: string,
  number: number,
  input: CreateTaskBody,
  createdBy: string,
  now = new Date().toISOString(),
): Omit<TaskDocument, '_etag'> {
  const priority = input.priority ?? TASK_DEFAULTS.priority;
  return {
    id: `TSK-${number}`,
    tenantId,
    type: 'task',
    projectId: input.projectId,
    title: input.title,
    description: input.description ?? '',
    status: input.status ?? TASK_DEFAULTS.status,
    priority,
    priorityRank: priorityRank(priority),
    assignee: input.assignee ?? null,
    dueDate: input.dueDate ?? null,
    createdAt: now,
    updatedAt: now,
    createdBy,
  };
}

export async function getTask(tenantId: string, id: string): Promise<Task> {
  return tasks.resourceOf(await readVisible(tasks, tenantId, id));
}

const SORT_PATHS: SortPaths<ListTasksQuery['sort']> = { createdAt: 'c.createdAt', dueDate: 'c.dueDate', priority: 'c.priorityRank' };

const FILTERS: ListFilters<ListTasksQuery> = {
  projectId: 'c.projectId = @projectId',
  status: 'c.status = @status',
  assignee: 'c.assignee = @assignee',
  // Strictly before; a task with no due date is never due before anything.
  dueBefore: 'IS_STRING(c.dueDate) AND c.dueDate < @dueBefore',
};

/** Tasks of the tenant; with `projectId`, of that project only. Every list reads the tenant's one partition. */
export function listTasks(tenantId: string, query: ListTasksQuery): Promise<Page<Task>> {
  return listPage(tasks, tenantId, query, { filters: FILTERS, orderBy: sortOrder(query.sort, SORT_PATHS) });
}

/** The tenant's tasks as the RAG index reads them. */
export const taskSources = indexSources(tasks, 'c.projectId');

/**
 * A change to a task, made while its project is writable: checked first (404, 409), and guarded in the
 * change's batch, so that a project archived or deleted meanwhile fails the change, which is then checked again.
 */
function changeTask(
  tenantId: string,
  id: string,
  expected: ExpectedVersion,
  make: (current: TaskDocument) => TaskDocument | typeof REMOVE,
  event: (change: { before: TaskDocument; after: TaskDocument | undefined }) => NewEvent,
): Promise<TaskDocument | undefined> {
  let project: ProjectDocument | undefined;
  return changeDocument({
    kind: tasks,
    tenantId,
    id,
    expected,
    async change(current) {
      project = await writableProject(tenantId, current.projectId);
      return make(current);
    },
    guard: () => stillWritable(project!),
    event,
  });
}

/** Applies the given fields. The tasks of an Archived project are read-only, like the project. */
export async function updateTask(tenantId: string, id: string, changes: UpdateTaskBody, expected: ExpectedVersion): Promise<Task> {
  const updated = await changeTask(
    tenantId,
    id,
    expected,
    (current) => {
      const priority = changes.priority ?? current.priority;
      return { ...current, ...changes, priority, priorityRank: priorityRank(priority), updatedAt: new Date().toISOString() };
    },
    ({ after }) => ({ type: 'task.updated', data: tasks.resourceOf(after!) }),
  );
  return tasks.resourceOf(updated!);
}

export async function deleteTask(tenantId: string, id: string, expected: ExpectedVersion): Promise<void> {
  await changeTask(
    tenantId,
    id,
    expected,
    () => REMOVE,
    ({ before }) => ({ type: 'task.deleted', data: { id: before.id, projectId: before.projectId } }),
  );
}
