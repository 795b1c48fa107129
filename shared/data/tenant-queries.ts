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

/** The conditions a list filters by, for each of its values that filters: a condition naming its value `@<name>`. */
export type ListFilters<Values> = { [Name in keyof Values & string]?: string };

/** Where each field a list sorts by is stored: a path such as `c.createdAt`. */
export type SortPaths<Sort extends string> = Record<Sort extends `-${infer Field}` ? Field : Sort, string>;

/** The ORDER BY of a list's `sort`: the field's path, descending when the sort starts with `-`. */
export function sortOrder<Sort extends string>(sort: Sort, paths: SortPaths<Sort>): string {
  const descending = sort.startsWith('-');
  const field = (descending ? sort.slice(1) : sort) as keyof SortPaths<Sort>;
  return `${paths[field]} ${descending ? 'DESC' : 'ASC'}`;
}

/**
 * One page of the visible documents of one kind in the tenant's partition. Each filter whose value is
 * given adds its condition; every value reaches Cosmos as a parameter, never as query text. The cursor
 * is bound to the tenant, the kind, the filters and the order.
 */
export async function listPage<D extends StoredDocument, R, Values extends { limit: number; cursor?: string | undefined }>(
  kind: DocumentKind<D, R>,
  tenantId: string,
  values: Values,
  { filters = {}, orderBy }: { filters?: ListFilters<Values>; orderBy: string },
): Promise<Page<R>> {
  const { conditions, parameters } = visibleOfKind(kind, tenantId);
  for (const [name, condition] of Object.entries(filters) as [keyof Values & string, string][]) {
    const value = values[name] as JSONValue | undefined;
    if (value === undefined) continue;
    conditions.push(condition);
    parameters.push({ name: `@${name}`, value });
  }
  const query = { query: `SELECT * FROM c WHERE ${conditions.join(' AND ')} ORDER BY ${orderBy}`, parameters };
  const scope = JSON.stringify([tenantId, kind.type, orderBy, parameters]);
  const page = await queryPage<D>(await tenantData(), tenantId, query, { limit: values.limit, cursor: values.cursor, scope });
  return { items: page.items.map((document) => kind.resourceOf(document)), nextCursor: page.nextCursor };
}

/**
 * A kind's documents as the RAG index reads them (the document's project id is `projectField`): the ids
 * of those in the projects named (every project when null), and the visible documents among some ids.
 */
export function indexSources<D extends StoredDocument, R>(kind: DocumentKind<D, R>, projectField: string) {
  return {
    /**
     * A page of ids from `continuation` (undefined: from the start): the next page's continuation goes with
     * them, so that a reader can stop and go on later, or in another process, without holding the whole tenant.
     */
    async idPage(tenantId: string, projectIds: readonly string[] | null, pageSize: number, continuation: string | undefined) {
      const { conditions, parameters } = visibleOfKind(kind, tenantId);
      if (projectIds) {
        conditions.push(`ARRAY_CONTAINS(@projectIds, ${projectField})`);
        parameters.push({ name: '@projectIds', value: [...projectIds] });
      }
      const query = { query: `SELECT VALUE c.id FROM c WHERE ${conditions.join(' AND ')}`, parameters };
      const ids: string[] = [];
      // Cosmos may answer short pages before the end: ask again until the page is full or the query ends.
      do {
        const page = await (
          await tenantData()
        ).items
          .query<string>(query, { partitionKey: tenantId, maxItemCount: pageSize - ids.length, continuationToken: continuation })
          .fetchNext();
        ids.push(...page.resources);
        continuation = page.continuationToken || undefined;
      } while (continuation !== undefined && ids.length < pageSize);
      return { ids, continuation };
    },

    /** The visible documents among these ids, as resources (an id that names none is left out). */
    async byIds(tenantId: string, ids: readonly string[]): Promise<R[]> {
      const { conditions, parameters } = visibleOfKind(kind, tenantId);
      const query = {
        query: `SELECT * FROM c WHERE ${[...conditions, 'ARRAY_CONTAINS(@ids, c.id)'].join(' AND ')}`,
        parameters: [...parameters, { name: '@ids', value: [...ids] }],
      };
      const { resources } = await (await tenantData()).items.query<D>(query, { partitionKey: tenantId, maxItemCount: FULL_SCAN_PAGE }).fetchAll();
      return resources.map((document) => kind.resourceOf(document));
    },
  };
}
