import type { Container, OperationInput } from '@azure/cosmos';
import type { Principal } from '../auth/principal.js';
import { assertStatusMove, membersWithOwner } from '../domain/project-rules.js';
import { ApiError, conflict, notFound } from '../errors.js';
import type { IfMatch } from '../http/etag.js';
import { projectId, type CreateProjectBody, type ListProjectsQuery, type Project, type UpdateProjectBody } from '../schemas/projects.js';
import { writeInBatches } from './batches.js';
import { cosmosStatus } from './cosmos.js';
import type { IdempotentRequest } from './idempotency.js';
import type { Page } from './paging.js';
import { createDocument, FULL_SCAN_PAGE, listPage, readDocument, tenantData, updateDocument, type Created } from './tenant-data.js';

export interface ProjectDocument extends Project {
  tenantId: string;
  type: 'project';
  /** Lower-cased name: case-insensitive search and sort without a function call per document. */
  nameSort: string;
  /** Set while a delete removes the project's tasks: the project is gone for every reader. */
  deleting?: true;
  _etag: string;
}

export function toProject(document: Project): Project {
  const { id, name, description, status, owner, members, createdAt, updatedAt, createdBy } = document;
  return { id, name, description, status, owner, members, createdAt, updatedAt, createdBy };
}

const missing = (id: string) => notFound('projectNotFound', { id: id.slice(0, 100) });

async function storedProject(tenantId: string, id: string): Promise<ProjectDocument | undefined> {
  // A malformed id cannot name a project: answer without asking the database.
  if (!projectId.safeParse(id).success) return undefined;
  return readDocument<ProjectDocument>(tenantId, id, 'project');
}

/** The project as its readers see it: 404 when absent, or while it is being deleted. */
export async function readProjectDocument(tenantId: string, id: string): Promise<ProjectDocument> {
  const document = await storedProject(tenantId, id);
  if (!document || document.deleting) throw missing(id);
  return document;
}

export async function createProject(principal: Principal, input: CreateProjectBody, idempotent: IdempotentRequest | undefined): Promise<Created<Project>> {
  const owner = input.owner ?? principal.email;
  if (!owner || !/^[^@\s]+@[^@\s]+$/.test(owner)) throw new ApiError(400, 'ownerRequired');
  const members = membersWithOwner(owner, input.members ?? []);
  return createDocument<Omit<ProjectDocument, '_etag'>, Project>({
    principal,
    idempotent,
    sequence: 'projects',
    represent: toProject,
    prepare(number) {
      const now = new Date().toISOString();
      const document: Omit<ProjectDocument, '_etag'> = {
        id: `PRJ-${number}`,
        tenantId: principal.tenantId,
        type: 'project',
        name: input.name,
        nameSort: input.name.toLowerCase(),
        description: input.description ?? '',
        status: 'Active',
        owner,
        members,
        createdAt: now,
        updatedAt: now,
        createdBy: principal.objectId,
      };
      return { document };
    },
  });
}

export async function getProject(principal: Principal, id: string): Promise<Project> {
  return toProject(await readProjectDocument(principal.tenantId, id));
}

const SORT_CLAUSES: Record<ListProjectsQuery['sort'], string> = {
  createdAt: 'c.createdAt ASC',
  '-createdAt': 'c.createdAt DESC',
  name: 'c.nameSort ASC',
  '-name': 'c.nameSort DESC',
};

export async function listProjects(principal: Principal, query: ListProjectsQuery): Promise<Page<Project>> {
  const page = await listPage<ProjectDocument>({
    tenantId: principal.tenantId,
    type: 'project',
    always: ['NOT IS_DEFINED(c.deleting)'],
    filters: {
      status: ['c.status = @status', query.status],
      owner: ['c.owner = @owner', query.owner],
      member: ['ARRAY_CONTAINS(c.members, @member)', query.member],
      q: ['CONTAINS(c.nameSort, @q)', query.q],
    },
    orderBy: SORT_CLAUSES[query.sort],
    limit: query.limit,
    cursor: query.cursor,
  });
  return { items: page.items.map(toProject), nextCursor: page.nextCursor };
}

/** Applies the given fields. An Archived project is read-only; status moves follow the contract. */
export async function updateProject(principal: Principal, id: string, changes: UpdateProjectBody, ifMatch: IfMatch): Promise<Project> {
  const updated = await updateDocument<ProjectDocument>({
    ifMatch,
    read: () => readProjectDocument(principal.tenantId, id),
    represent: toProject,
    change(current) {
      if (current.status === 'Archived') throw conflict('projectArchived', { id });
      if (changes.status) assertStatusMove(current.status, changes.status);
      const owner = changes.owner ?? current.owner;
      const name = changes.name ?? current.name;
      return {
        ...current,
        name,
        nameSort: name.toLowerCase(),
        description: changes.description ?? current.description,
        status: changes.status ?? current.status,
        owner,
        members: membersWithOwner(owner, changes.members ?? current.members),
        updatedAt: new Date().toISOString(),
      };
    },
  });
  return toProject(updated);
}

/**
 * Deletes a project and its tasks. The project is first marked as deleting, which hides it from
 * readers and from new task creates; then its tasks go, in batches; then the project itself; then
 * one last sweep. A task create is guarded by the project's existence in its transactional batch,
 * so a create that raced the delete either committed before the project went (and the last sweep
 * removes it) or fails. A delete that stopped half way is finished by the next DELETE.
 */
export async function deleteProject(principal: Principal, id: string, ifMatch: IfMatch): Promise<void> {
  const { tenantId } = principal;
  const documents = await tenantData();
  let known = await storedProject(tenantId, id);
  if (!known) throw missing(id);
  if (!known.deleting) {
    await updateDocument<ProjectDocument>({
      ifMatch,
      // The first attempt uses the document just read; a retry after a clash reads it again.
      async read() {
        const current = known ?? (await readProjectDocument(tenantId, id));
        known = undefined;
        return current;
      },
      represent: toProject,
      change: (current) => ({ ...current, deleting: true }),
    });
  }
  await deleteTasksOfProject(documents, tenantId, id);
  try {
    await documents.item(id, tenantId).delete();
  } catch (error) {
    // A concurrent DELETE finished first: the project is gone either way.
    if (cosmosStatus(error) !== 404) throw error;
  }
  // Now that no create can pass its guard, remove what slipped in while the first sweep ran.
  await deleteTasksOfProject(documents, tenantId, id);
}

/** Removes every task of the project, in transactional batches. */
async function deleteTasksOfProject(documents: Container, tenantId: string, id: string): Promise<void> {
  const query = {
    query: "SELECT c.id FROM c WHERE c.tenantId = @tenantId AND c.type = 'task' AND c.projectId = @projectId",
    parameters: [
      { name: '@tenantId', value: tenantId },
      { name: '@projectId', value: id },
    ],
  };
  const { resources: tasks } = await documents.items.query<{ id: string }>(query, { partitionKey: tenantId, maxItemCount: FULL_SCAN_PAGE }).fetchAll();
  await writeInBatches(
    documents,
    tenantId,
    tasks.map(({ id: taskId }): OperationInput => ({ operationType: 'Delete', id: taskId, partitionKey: tenantId })),
  );
}
