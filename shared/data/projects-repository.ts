import type { Container, OperationInput } from '@azure/cosmos';
import { changed, INITIAL_STATUS, membersWithOwner } from '../domain/projects.js';
import type { ExpectedVersion } from '../domain/versions.js';
import { notFound } from '../domain/errors.js';
import { project, type CreateProjectBody, type ListProjectsQuery, type Project, type UpdateProjectBody } from '../schemas/projects.js';
import { sendBatch, writeInBatches, type Tally } from './batches.js';
import { eventWrite } from './events.js';
import type { Idempotency } from './idempotency.js';
import type { Page } from './paging.js';
import {
  batchFailure,
  changeDocument,
  createDocument,
  fieldsOf,
  FULL_SCAN_PAGE,
  readDocument,
  readVisible,
  stillExists,
  tenantData,
  type Created,
  type DocumentKind,
} from './tenant-data.js';
import { indexSources, listPage, sortOrder, type ListFilters, type SortPaths } from './tenant-queries.js';

export interface ProjectDocument extends Project {
  tenantId: string;
  type: 'project';
  /** Lower-cased name: case-insensitive search and sort without a function call per document. */
  nameSort: string;
  /** Set while a delete removes the project's tasks. */
  deleting?: true;
  /** While it is deleted: the tasks removed so far, by every DELETE (what its `project.deleted` event counts). Never shown. */
  deletedTaskCount?: number;
  _etag: string;
}

/**
 * Projects. Deleting one first marks it `deleting`, and from then on it is gone for every reader and
 * writer (this is where that rule lives); then its tasks go, then the project itself.
 */
export const projects: DocumentKind<ProjectDocument, Project> = {
  type: 'project',
  resourceOf: fieldsOf(project),
  missing: (id) => notFound('projectNotFound', { id: id.slice(0, 100) }),
  hidden: { is: (document) => document.deleting === true, where: 'IS_DEFINED(c.deleting)' },
};

/**
 * A batch operation that fails unless the project is, when the batch commits, still there, visible and
 * not Archived (assertWritable's rule): what a task's write is guarded by.
 */
export function stillWritable(project: ProjectDocument): OperationInput {
  return stillExists(project, `NOT IS_DEFINED(c.deleting) AND c.status != 'Archived'`);
}

/** The project as its readers see it: 404 when absent, or while it is being deleted. */
export function readProjectDocument(tenantId: string, id: string): Promise<ProjectDocument> {
  return readVisible(projects, tenantId, id);
}

/** `owner` is the one the rules gave (`ownerOf`). */
export async function createProject(
  tenantId: string,
  actor: string,
  owner: string,
  input: CreateProjectBody,
  idempotency: Idempotency | undefined,
): Promise<Created<Project>> {
  const members = membersWithOwner(owner, input.members ?? []);
  return createDocument<Omit<ProjectDocument, '_etag'>, Project>({
    kind: projects,
    tenantId,
    actor,
    idempotency,
    request: input,
    sequence: 'projects',
    event: (created) => ({ type: 'project.created', data: created }),
    prepare(number) {
      const now = new Date().toISOString();
      const document: Omit<ProjectDocument, '_etag'> = {
        id: `PRJ-${number}`,
        tenantId,
        type: 'project',
        name: input.name,
        nameSort: input.name.toLowerCase(),
        description: input.description ?? '',
        status: INITIAL_STATUS,
        owner,
        members,
        createdAt: now,
        updatedAt: now,
        createdBy: actor,
      };
      return { document };
    },
  });
}

export async function getProject(tenantId: string, id: string): Promise<Project> {
  return projects.resourceOf(await readProjectDocument(tenantId, id));
}

const SORT_PATHS: SortPaths<ListProjectsQuery['sort']> = { createdAt: 'c.createdAt', name: 'c.nameSort' };

const FILTERS: ListFilters<ListProjectsQuery> = {
  status: 'c.status = @status',
  owner: 'c.owner = @owner',
  member: 'ARRAY_CONTAINS(c.members, @member)',
  q: 'CONTAINS(c.nameSort, @q)',
};

export function listProjects(tenantId: string, query: ListProjectsQuery): Promise<Page<Project>> {
  return listPage(projects, tenantId, query, { filters: FILTERS, orderBy: sortOrder(query.sort, SORT_PATHS) });
}

/** The tenant's visible projects as the RAG index reads them. */
export const projectSources = indexSources(projects, 'c.id');

/** Applies the given fields, as the project rules say (`changed`). */
export async function updateProject(tenantId: string, id: string, changes: UpdateProjectBody, expected: ExpectedVersion): Promise<Project> {
  const updated = await changeDocument({
    kind: projects,
    tenantId,
    id,
    expected,
    change: (current) => changed(current, changes, new Date().toISOString()),
    event: ({ after }) => ({ type: 'project.updated', data: projects.resourceOf(after!) }),
  });
  return projects.resourceOf(updated!);
}

/**
 * Deletes a project and its tasks. The project is first marked as deleting, which hides it from
 * readers and from new task creates; then its tasks go, in batches, each batch counting what it
 * removes on the project; then the project itself, together with its `project.deleted` event (one
 * event: its tasks send none), which carries that count; then one last sweep.
 * A task create is guarded by the project in its transactional batch (stillWritable), so a create that
 * raced the delete either committed before the mark (and a sweep removes it) or fails. A delete that
 * stopped half way is finished by the next DELETE, and the count is of every task any of them removed.
 */
export async function deleteProject(tenantId: string, id: string, expected: ExpectedVersion): Promise<void> {
  const documents = await tenantData();
  const stored = await readDocument<ProjectDocument>(tenantId, id, projects.type);
  if (!stored) throw projects.missing(id);
  if (!stored.deleting) {
    // The first attempt uses the document just read; a retry after a clash reads it again.
    let first: ProjectDocument | undefined = stored;
    await changeDocument({
      kind: projects,
      tenantId,
      id,
      expected,
      read: async () => {
        const current = first ?? (await readProjectDocument(tenantId, id));
        first = undefined;
        return current;
      },
      change: (current) => ({ ...current, deleting: true as const }),
    });
  }
  await sweepCounting(documents, tenantId, id);
  await deleteWithEvent(documents, tenantId, id);
  // Now that no create can pass its guard, remove what slipped in while the first sweep ran (the event is written: uncounted).
  await writeInBatches(documents, tenantId, await taskDeletes(documents, tenantId, id));
}

/**
 * Removes the project's tasks, each transactional batch adding the tasks it removes to the project's
 * `deletedTaskCount`: the count commits with the removals, once, and a batch sent again without the
 * tasks already gone counts only those it removes. It stops when the project is gone (the count's
 * patch finds nothing): a concurrent DELETE finished it.
 */
async function sweepCounting(documents: Container, tenantId: string, id: string): Promise<void> {
  const countRemoved: Tally = (removals) => ({
    operationType: 'Patch',
    id,
    partitionKey: tenantId,
    resourceBody: { operations: [{ op: 'incr', path: '/deletedTaskCount', value: removals.length }] },
  });
  try {
    await writeInBatches(documents, tenantId, await taskDeletes(documents, tenantId, id), { tally: countRemoved });
  } catch (error) {
    if ((error as { code?: unknown }).code !== 404) throw error;
  }
}

/**
 * Deletes the project with its `project.deleted` event, which carries the count read from the project,
 * under the etag it was read with: a sweep that lands in between changes the etag (412), and the count
 * is read again. Each such clash is a batch that removed tasks, and a marked project gets none, so
 * this ends.
 */
async function deleteWithEvent(documents: Container, tenantId: string, id: string): Promise<void> {
  for (;;) {
    const project = await readDocument<ProjectDocument>(tenantId, id, projects.type);
    // Gone: a concurrent DELETE finished first, and its batch wrote the event.
    if (!project) return;
    const event = eventWrite(tenantId, { type: 'project.deleted', data: { id, deletedTasks: project.deletedTaskCount ?? 0 } });
    // The SDK's types leave ifMatch off a delete; Cosmos's batches take it.
    const remove = { operationType: 'Delete', id, partitionKey: tenantId, ifMatch: project._etag } as OperationInput;
    const result = await sendBatch(documents, [remove, event], tenantId);
    const status = result[0]?.statusCode;
    if (status === 204 || status === 404) return;
    if (status !== 412) throw batchFailure('Deleting a project', result);
  }
}

/** A delete of each task of the project. */
async function taskDeletes(documents: Container, tenantId: string, id: string): Promise<OperationInput[]> {
  const query = {
    query: "SELECT c.id FROM c WHERE c.tenantId = @tenantId AND c.type = 'task' AND c.projectId = @projectId",
    parameters: [
      { name: '@tenantId', value: tenantId },
      { name: '@projectId', value: id },
    ],
  };
  const { resources: tasks } = await documents.items.query<{ id: string }>(query, { partitionKey: tenantId, maxItemCount: FULL_SCAN_PAGE }).fetchAll();
  return tasks.map(({ id: taskId }): OperationInput => ({ operationType: 'Delete', id: taskId, partitionKey: tenantId }));
}
