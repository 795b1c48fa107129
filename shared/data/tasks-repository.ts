import type { Principal } from '../auth/principal.js';
import { conflict, notFound, preconditionFailed } from '../errors.js';
import { entityTag, satisfies, type IfMatch } from '../http/etag.js';
import { taskId, TASK_PRIORITIES, type CreateTaskBody, type ListTasksQuery, type Task, type TaskPriority, type UpdateTaskBody } from '../schemas/tasks.js';
import { cosmosStatus } from './cosmos.js';
import type { IdempotentRequest } from './idempotency.js';
import type { Page } from './paging.js';
import { readProjectDocument, type ProjectDocument } from './projects-repository.js';
import { createDocument, listPage, readDocument, stillExists, tenantData, updateDocument, type Created } from './tenant-data.js';

interface TaskDocument extends Task {
  tenantId: string;
  type: 'task';
  /** 1 (Low) to 4 (Urgent): sorting by priority follows the rank, not the spelling. */
  priorityRank: number;
  _etag: string;
}

function toTask(document: Task): Task {
  const { id, projectId, title, description, status, priority, assignee, dueDate, createdAt, updatedAt, createdBy } = document;
  return { id, projectId, title, description, status, priority, assignee, dueDate, createdAt, updatedAt, createdBy };
}

const rank = (priority: TaskPriority): number => TASK_PRIORITIES.indexOf(priority) + 1;
const missing = (id: string) => notFound('taskNotFound', { id: id.slice(0, 100) });

/** A project whose tasks may change: present (404 otherwise) and not Archived (409). */
async function writableProject(tenantId: string, projectId: string): Promise<ProjectDocument> {
  const project = await readProjectDocument(tenantId, projectId);
  if (project.status === 'Archived') throw conflict('projectArchived', { id: projectId });
  return project;
}

async function readTaskDocument(tenantId: string, id: string): Promise<TaskDocument> {
  // A malformed id cannot name a task: answer without asking the database.
  const document = taskId.safeParse(id).success ? await readDocument<TaskDocument>(tenantId, id, 'task') : undefined;
  if (!document) throw missing(id);
  return document;
}

/**
 * Creates a task in a project that exists and is not Archived. The project's existence guards the
 * create in the same transactional batch: once a delete has removed the project, no task can be
 * added to it, and the delete's last sweep removes any task that was added while it ran.
 */
export async function createTask(principal: Principal, input: CreateTaskBody, idempotent: IdempotentRequest | undefined): Promise<Created<Task>> {
  return createDocument<Omit<TaskDocument, '_etag'>, Task, ProjectDocument>({
    principal,
    idempotent,
    sequence: 'tasks',
    represent: toTask,
    check: () => writableProject(principal.tenantId, input.projectId),
    prepare(number, project) {
      const now = new Date().toISOString();
      const priority = input.priority ?? 'Medium';
      const document: Omit<TaskDocument, '_etag'> = {
        id: `TSK-${number}`,
        tenantId: principal.tenantId,
        type: 'task',
        projectId: input.projectId,
        title: input.title,
        description: input.description ?? '',
        status: input.status ?? 'Todo',
        priority,
        priorityRank: rank(priority),
        assignee: input.assignee ?? null,
        dueDate: input.dueDate ?? null,
        createdAt: now,
        updatedAt: now,
        createdBy: principal.objectId,
      };
      return { document, guard: stillExists(project) };
    },
  });
}

export async function getTask(principal: Principal, id: string): Promise<Task> {
  return toTask(await readTaskDocument(principal.tenantId, id));
}

const SORT_CLAUSES: Record<ListTasksQuery['sort'], string> = {
  createdAt: 'c.createdAt ASC',
  '-createdAt': 'c.createdAt DESC',
  dueDate: 'c.dueDate ASC',
  '-dueDate': 'c.dueDate DESC',
  priority: 'c.priorityRank ASC',
  '-priority': 'c.priorityRank DESC',
};

/** Tasks of the tenant; with `projectId`, of that project only. Every list reads the tenant's one partition. */
export async function listTasks(principal: Principal, query: ListTasksQuery): Promise<Page<Task>> {
  const page = await listPage<TaskDocument>({
    tenantId: principal.tenantId,
    type: 'task',
    filters: {
      projectId: ['c.projectId = @projectId', query.projectId],
      status: ['c.status = @status', query.status],
      assignee: ['c.assignee = @assignee', query.assignee],
      // Strictly before; a task with no due date is never due before anything.
      dueBefore: ['IS_STRING(c.dueDate) AND c.dueDate < @dueBefore', query.dueBefore],
    },
    orderBy: SORT_CLAUSES[query.sort],
    limit: query.limit,
    cursor: query.cursor,
  });
  return { items: page.items.map(toTask), nextCursor: page.nextCursor };
}

/** Applies the given fields. The tasks of an Archived project are read-only, like the project. */
export async function updateTask(principal: Principal, id: string, changes: UpdateTaskBody, ifMatch: IfMatch): Promise<Task> {
  const updated = await updateDocument<TaskDocument>({
    ifMatch,
    read: () => readTaskDocument(principal.tenantId, id),
    represent: toTask,
    async change(current) {
      await writableProject(principal.tenantId, current.projectId);
      const priority = changes.priority ?? current.priority;
      return {
        ...current,
        ...changes,
        priority,
        priorityRank: rank(priority),
        updatedAt: new Date().toISOString(),
      };
    },
  });
  return toTask(updated);
}

export async function deleteTask(principal: Principal, id: string, ifMatch: IfMatch): Promise<void> {
  const { tenantId } = principal;
  const current = await readTaskDocument(tenantId, id);
  if (!satisfies(ifMatch, entityTag(toTask(current)))) throw preconditionFailed();
  await writableProject(tenantId, current.projectId);
  // With If-Match the delete must hit the version the client named; without it the last write wins.
  const condition = Array.isArray(ifMatch) ? { accessCondition: { type: 'IfMatch', condition: current._etag } } : {};
  try {
    await (await tenantData()).item(id, tenantId).delete(condition);
  } catch (error) {
    const status = cosmosStatus(error);
    if (status === 404) throw missing(id);
    if (status === 412) throw preconditionFailed();
    throw error;
  }
}
