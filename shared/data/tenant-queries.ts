/**
 * Reading the tenant's documents of one kind as their readers may see them: a page of a list (with
 * its filters and cursor), a page of ids, or the documents among some ids.
 */
import type { JSONValue, SqlParameter } from '@azure/cosmos';
import { queryPage, type Page } from './paging.js';
import { FULL_SCAN_PAGE, tenantData, type DocumentKind, type StoredDocument } from './tenant-data.js';

/** The query conditions, and their parameters, that select the documents of a kind its readers may see. */
function visibleOfKind<D extends StoredDocument, R>(kind: DocumentKind<D, R>, tenantId: string): { conditions: string[]; parameters: SqlParameter[] } {
  return {
    conditions: ['c.tenantId = @tenantId', 'c.type = @type', ...(kind.hidden ? [`NOT (${kind.hidden.where})`] : [])],
    parameters: [
      { name: '@tenantId', value: tenantId },
      { name: '@type', value: kind.type },
    ],
  };
}

/** A filter of a list: its condition (naming its value `@<filter name>`) and the value, if the caller gave one. */
export type ListFilter = [condition: string, value: JSONValue | undefined];

/**
 * One page of the visible documents of one kind in the tenant's partition. Each filter given adds
 * its condition; every value reaches Cosmos as a parameter, never as query text. The cursor is
 * bound to the tenant, the kind, the filters and the order.
 */
export async function listPage<D extends StoredDocument, R>(options: {
  kind: DocumentKind<D, R>;
  tenantId: string;
  filters: Record<string, ListFilter>;
  orderBy: string;
  limit: number;
  cursor: string | undefined;
}): Promise<Page<R>> {
  const { kind, tenantId } = options;
  const { conditions, parameters } = visibleOfKind(kind, tenantId);
  for (const [name, [condition, value]] of Object.entries(options.filters)) {
    if (value === undefined) continue;
    conditions.push(condition);
    parameters.push({ name: `@${name}`, value });
  }
  const query = { query: `SELECT * FROM c WHERE ${conditions.join(' AND ')} ORDER BY ${options.orderBy}`, parameters };
  const scope = JSON.stringify([tenantId, kind.type, options.orderBy, parameters]);
  const page = await queryPage<D>(await tenantData(), tenantId, query, { limit: options.limit, cursor: options.cursor, scope });
  return { items: page.items.map((document) => kind.resourceOf(document)), nextCursor: page.nextCursor };
}

/** A condition on documents of a kind, its values named in it as parameters. */
export interface Where {
  condition: string;
  parameters: SqlParameter[];
}

/**
 * Documents that belong to one of the projects named (the document's project id is `projectField`):
 * the scope of a RAG index rebuild. No condition when projectIds is null: every project.
 */
export function inProjects(projectField: string, projectIds: readonly string[] | null): Where | undefined {
  return projectIds ? { condition: `ARRAY_CONTAINS(@projectIds, ${projectField})`, parameters: [{ name: '@projectIds', value: [...projectIds] }] } : undefined;
}

/**
 * The ids of visible documents of one kind that meet `where`, a page at a time from `continuation`
 * (undefined: from the start): the next page's continuation goes with them, so that a reader can
 * stop and go on later, or in another process, without holding the whole tenant.
 */
export async function idPage<D extends StoredDocument, R>(options: {
  kind: DocumentKind<D, R>;
  tenantId: string;
  where: Where | undefined;
  pageSize: number;
  continuation: string | undefined;
}): Promise<{ ids: string[]; continuation: string | undefined }> {
  const { conditions, parameters } = visibleOfKind(options.kind, options.tenantId);
  if (options.where) {
    conditions.push(options.where.condition);
    parameters.push(...options.where.parameters);
  }
  const query = { query: `SELECT VALUE c.id FROM c WHERE ${conditions.join(' AND ')}`, parameters };
  const ids: string[] = [];
  let continuation = options.continuation;
  // Cosmos may answer short pages before the end: ask again until the page is full or the query ends.
  do {
    const page = await (
      await tenantData()
    ).items
      .query<string>(query, { partitionKey: options.tenantId, maxItemCount: options.pageSize - ids.length, continuationToken: continuation })
      .fetchNext();
    ids.push(...page.resources);
    continuation = page.continuationToken || undefined;
  } while (continuation !== undefined && ids.length < options.pageSize);
  return { ids, continuation };
}

/** The visible documents of one kind among these ids, as resources (an id that names none is left out). */
export async function readByIds<D extends StoredDocument, R>(kind: DocumentKind<D, R>, tenantId: string, ids: readonly string[]): Promise<R[]> {
  const { conditions, parameters } = visibleOfKind(kind, tenantId);
  const query = {
    query: `SELECT * FROM c WHERE ${[...conditions, 'ARRAY_CONTAINS(@ids, c.id)'].join(' AND ')}`,
    parameters: [...parameters, { name: '@ids', value: [...ids] }],
  };
  const { resources } = await (await tenantData()).items.query<D>(query, { partitionKey: tenantId, maxItemCount: FULL_SCAN_PAGE }).fetchAll();
  return resources.map((document) => kind.resourceOf(document));
}
