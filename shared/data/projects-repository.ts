import type { SqlParameter } from '@azure/cosmos';
import type { Principal } from '../auth/principal.js';
import { assertStatusMove, membersWithOwner } from '../domain/project-rules.js';
import { ApiError, conflict, notFound, preconditionFailed } from '../errors.js';
import { satisfies, type IfMatch } from '../http/etag.js';
import { projectId, type CreateProjectBody, type ListProjectsQuery, type Project, type UpdateProjectBody } from '../schemas/projects.js';
import { container, cosmosStatus } from './cosmos.js';
import { recordedResult, recordResultOperation, type IdempotentRequest } from './idempotency.js';
import { queryPage, type Page } from './paging.js';
import { nextInSequence } from './sequence.js';

const TYPE = 'project';

interface ProjectDocument extends Project {
  tenantId: string;
  type: typeof TYPE;
  /** Lower-cased name: case-insensitive search and sort without a function call per document. */
  nameSort: string;
  _etag: string;
}

/** A project as the API shows it, and the version its ETag names. */
export interface StoredProject {
  project: Project;
  etag: string;
}

function toProject(document: Project): Project {
  const { id, name, description, status, owner, members, createdAt, updatedAt, createdBy } = document;
  return { id, name, description, status, owner, members, createdAt, updatedAt, createdBy };
}

function stored(document: ProjectDocument): StoredProject {
  return { project: toProject(document), etag: document._etag };
}

const missing = (id: string) => notFound('projectNotFound', { id: id.slice(0, 100) });

export interface CreatedProject {
  project: Project;
  /** Absent when an Idempotency-Key replay returns the recorded first result. */
  etag: string | undefined;
  replayed: boolean;
}

export async function createProject(principal: Principal, input: CreateProjectBody, idempotent: IdempotentRequest | undefined): Promise<CreatedProject> {
  const projects = await container('projects');
  const { tenantId } = principal;
  if (idempotent) {
    const replay = await recordedResult<Project>(projects, tenantId, idempotent);
    if (replay) return { project: replay, etag: undefined, replayed: true };
  }
  const owner = input.owner ?? principal.email;
  if (!owner || !/^[^@\s]+@[^@\s]+$/.test(owner)) throw new ApiError(400, 'ownerRequired');
  const number = await nextInSequence(projects, tenantId, 'projects');
  const now = new Date().toISOString();
  const name = input.name;
  const document: Omit<ProjectDocument, '_etag'> = {
    id: `PRJ-${number}`,
    tenantId,
    type: TYPE,
    name,
    nameSort: name.toLowerCase(),
    description: input.description ?? '',
    status: 'Active',
    owner,
    members: membersWithOwner(owner, input.members ?? []),
    createdAt: now,
    updatedAt: now,
    createdBy: principal.objectId,
  };
  if (!idempotent) {
    const { resource } = await projects.items.create(document);
    return { ...stored(resource as ProjectDocument), replayed: false };
  }
  const { result = [] } = await projects.items.batch(
    [recordResultOperation(tenantId, idempotent, toProject(document)), { operationType: 'Create', resourceBody: document }],
    tenantId,
  );
  const [record, created] = result;
  if (record?.statusCode === 409) {
    // A concurrent request with the same key won the race: answer with its result.
    const replay = await recordedResult<Project>(projects, tenantId, idempotent);
    if (replay) return { project: replay, etag: undefined, replayed: true };
  }
  if (!created || created.statusCode !== 201) throw new Error(`Project batch failed: ${result.map((r) => r.statusCode).join(',')}`);
  return { ...stored(created.resourceBody as unknown as ProjectDocument), replayed: false };
}

async function readDocument(tenantId: string, id: string): Promise<ProjectDocument> {
  // A malformed id cannot name a project: answer without asking the database.
  if (!projectId.safeParse(id).success) throw missing(id);
  const projects = await container('projects');
  const { resource } = await projects.item(id, tenantId).read<ProjectDocument>();
  if (!resource || resource.type !== TYPE) throw missing(id);
  return resource;
}

export async function getProject(principal: Principal, id: string): Promise<StoredProject> {
  return stored(await readDocument(principal.tenantId, id));
}

const SORT_CLAUSES: Record<ListProjectsQuery['sort'], string> = {
  createdAt: 'c.createdAt ASC',
  '-createdAt': 'c.createdAt DESC',
  name: 'c.nameSort ASC',
  '-name': 'c.nameSort DESC',
};

export async function listProjects(principal: Principal, query: ListProjectsQuery): Promise<Page<Project>> {
  const projects = await container('projects');
  const conditions = ['c.tenantId = @tenantId', 'c.type = @type'];
  const parameters: SqlParameter[] = [
    { name: '@tenantId', value: principal.tenantId },
    { name: '@type', value: TYPE },
  ];
  // Every value reaches Cosmos as a parameter, never as query text.
  const filters: [keyof ListProjectsQuery, string][] = [
    ['status', 'c.status = @status'],
    ['owner', 'c.owner = @owner'],
    ['member', 'ARRAY_CONTAINS(c.members, @member)'],
    ['q', 'CONTAINS(c.nameSort, @q)'],
  ];
  for (const [name, condition] of filters) {
    const value = query[name];
    if (value === undefined) continue;
    conditions.push(condition);
    parameters.push({ name: `@${name}`, value });
  }
  const sql = `SELECT * FROM c WHERE ${conditions.join(' AND ')} ORDER BY ${SORT_CLAUSES[query.sort]}`;
  const scope = JSON.stringify(['projects', principal.tenantId, query.status, query.owner, query.member, query.q, query.sort]);
  const page = await queryPage<ProjectDocument>(projects, principal.tenantId, { query: sql, parameters }, { limit: query.limit, cursor: query.cursor, scope });
  return { items: page.items.map(toProject), nextCursor: page.nextCursor };
}

const MAX_UPDATE_ATTEMPTS = 5;

/**
 * Applies the given fields to the stored project. With If-Match the write succeeds only on that exact
 * version; without it the last write wins, but the read-modify-write still never interleaves.
 */
export async function updateProject(principal: Principal, id: string, changes: UpdateProjectBody, ifMatch: IfMatch): Promise<StoredProject> {
  const projects = await container('projects');
  for (let attempt = 1; ; attempt++) {
    const current = await readDocument(principal.tenantId, id);
    if (!satisfies(ifMatch, current._etag)) throw preconditionFailed();
    if (current.status === 'Archived') throw conflict('projectArchived', { id });
    if (changes.status) assertStatusMove(current.status, changes.status);
    const owner = changes.owner ?? current.owner;
    const name = changes.name ?? current.name;
    const next: ProjectDocument = {
      ...current,
      name,
      nameSort: name.toLowerCase(),
      description: changes.description ?? current.description,
      status: changes.status ?? current.status,
      owner,
      members: membersWithOwner(owner, changes.members ?? current.members),
      updatedAt: new Date().toISOString(),
    };
    try {
      const { resource } = await projects.item(id, principal.tenantId).replace(next, { accessCondition: { type: 'IfMatch', condition: current._etag } });
      return stored(resource as ProjectDocument);
    } catch (error) {
      const status = cosmosStatus(error);
      if (status === 404) throw missing(id);
      if (status !== 412) throw error;
      // Someone wrote between our read and write. The client's If-Match names a version that is gone.
      if (Array.isArray(ifMatch) || attempt >= MAX_UPDATE_ATTEMPTS) throw preconditionFailed();
    }
  }
}

export async function deleteProject(principal: Principal, id: string, ifMatch: IfMatch): Promise<void> {
  const projects = await container('projects');
  let condition: string | undefined;
  if (ifMatch !== undefined) {
    const current = await readDocument(principal.tenantId, id);
    if (!satisfies(ifMatch, current._etag)) throw preconditionFailed();
    condition = current._etag;
  } else if (!projectId.safeParse(id).success) {
    throw missing(id);
  }
  try {
    await projects.item(id, principal.tenantId).delete(condition ? { accessCondition: { type: 'IfMatch', condition } } : {});
  } catch (error) {
    const status = cosmosStatus(error);
    if (status === 404) throw missing(id);
    if (status === 412) throw preconditionFailed();
    throw error;
  }
}
