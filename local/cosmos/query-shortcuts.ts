/**
 * Two shortcuts that make @vercel/cosmosdb-server, which runs every query over every document, answer the app's queries
 * about as Cosmos DB's indexes do, with the rows and continuations of the full run (docs/local-stack.md).
 */
import { createRequire } from 'node:module';
import { firstIndex } from './change-feed.js';

type Primitive = string | number | boolean | null;
type Document = Record<string, unknown> & { _rid: string };
type AstNode = { type: string; [key: string]: unknown };

interface QueryOptions {
  parameters?: { name: string; value: unknown }[];
  udf?: unknown;
  maxItemCount?: number | null;
  continuation?: { token: string } | null;
  compositeIndexes?: unknown;
}
interface CompiledQuery {
  ast: { body: AstNode };
  exec(documents: Document[], options: QueryOptions): unknown;
}
/** The server's document collection of one container (lib/account/items.js), as far as used here. */
interface ServerDocuments {
  _data: Map<string, { read(): Document | undefined }>;
  _parent: { read(): { indexingPolicy?: { compositeIndexes?: unknown } } | null };
  _getQuery(sql: string): CompiledQuery;
  _userDefinedFunctions(): unknown;
  _item(keyPath: string, value: string, partition: unknown, expiredToo?: boolean): { read(): Document | undefined };
  /** The server's (patches/@vercel+cosmosdb-server+1.0.1.patch): whether a query shows a document: not expired, and in the partition it was sent to. */
  _shows(document: Document, partitionKey: Primitive[] | undefined): boolean;
  /** Ours: the collection's index, made at its first query. */
  shortcutIndex?: DocumentIndex;
}

const require = createRequire(import.meta.url);
const documentsClass = require('@vercel/cosmosdb-server/lib/account/documents.js') as { default: { prototype: Record<string, unknown> } };
const itemsClass = require('@vercel/cosmosdb-server/lib/account/items.js') as { default: { prototype: Record<string, (...args: never[]) => unknown> } };
const continuationTokens = require('@zeit/cosmosdb-query/lib/continuation-token.js') as { decode(token: string): { RID?: unknown } };
const aggregateFunctions = Object.keys(require('@zeit/cosmosdb-query/lib/aggregate-functions.js') as object);

/** A condition every row meets: the field, at the top level of the document, equals one of these values. */
type Required = { field: string; values: Primitive[] };

const isPrimitive = (value: unknown): value is Primitive => value === null || ['string', 'number', 'boolean'].includes(typeof value);

const CONSTANTS = ['string_constant', 'number_constant', 'boolean_constant', 'null_constant'];

/** `c.field`, on the query's one document alias. */
function fieldOf(node: AstNode, alias: string): string | undefined {
  const { object, property } = node as AstNode & { object: AstNode; property: AstNode };
  const onAlias = node.type === 'scalar_member_expression' && !node.computed && object.type === 'identifier' && object.name === alias;
  return onAlias ? (property.name as string) : undefined;
}

/** The conditions `c.field = value` and `ARRAY_CONTAINS(@values, c.field)` joined by AND, with their values: plain ones only. */
function requiredBy(condition: AstNode, alias: string, parameters: QueryOptions['parameters']): Required[] {
  const parameter = (node: AstNode | undefined) => (node?.type === 'parameter_name' ? parameters?.find(({ name }) => name === node.name)?.value : undefined);
  if (condition.type === 'scalar_binary_expression' && condition.operator === 'AND') {
    return [...requiredBy(condition.left as AstNode, alias, parameters), ...requiredBy(condition.right as AstNode, alias, parameters)];
  }
  if (condition.type === 'scalar_binary_expression' && condition.operator === '=') {
    const [left, right] = [condition.left as AstNode, condition.right as AstNode];
    const [field, other] = fieldOf(left, alias) ? [fieldOf(left, alias), right] : [fieldOf(right, alias), left];
    const value = CONSTANTS.includes(other.type) ? (other.value ?? null) : parameter(other);
    if (field && isPrimitive(value)) return [{ field, values: [value] }];
  }
  if (condition.type === 'scalar_function_expression' && String((condition.name as AstNode).name).toUpperCase() === 'ARRAY_CONTAINS') {
    const [list, item, partial] = condition.arguments as AstNode[];
    const field = item && fieldOf(item, alias);
    const exact = !partial || (partial.type === 'boolean_constant' && partial.value === false);
    const values = parameter(list);
    if (field && exact && Array.isArray(values) && values.every(isPrimitive)) return [{ field, values }];
  }
  return [];
}

function mentionsAggregate(node: unknown): boolean {
  if (!node || typeof node !== 'object') return false;
  const { type, name } = node as AstNode;
  if (type === 'scalar_function_expression' && aggregateFunctions.includes(String((name as AstNode).name).toUpperCase())) return true;
  return Object.values(node).some(mentionsAggregate);
}

/** What a query allows: which conditions narrow it, and whether it can be paged in `_rid` order. */
function shapeOf(query: CompiledQuery, parameters: QueryOptions['parameters']): { required: Required[]; inRidOrder: boolean } {
  const body = query.ast.body;
  const from = body.from as { source: { expression: AstNode; alias: AstNode | null }; joins: unknown[] } | null;
  const collection = from?.source.expression;
  const fromContainer = collection?.type === 'collection_expression' && (collection.expression as AstNode).type === 'identifier';
  const oneRowPerDocument = fromContainer && from!.joins.length === 0;
  const alias = from?.source.alias?.name ?? (collection?.expression as AstNode | undefined)?.name;
  const where = body.where as { condition: AstNode } | null;
  return {
    required: oneRowPerDocument && where ? requiredBy(where.condition, alias as string, parameters) : [],
    inRidOrder: oneRowPerDocument && body.top === null && body.orderBy === null && !mentionsAggregate(body.select),
  };
}

/** One container's documents in `_rid` order and by field value, kept up to date by its writes. */
class DocumentIndex {
  private ordered: string[];
  /** Written since the order was last merged; a replaced document (which keeps its `_rid`) too. */
  private readonly added: string[] = [];
  private readonly byField = new Map<string, Map<Primitive, Set<string>>>();

  constructor(private readonly data: ServerDocuments['_data']) {
    this.ordered = [...data.keys()].sort();
  }

  written(document: Document): void {
    this.added.push(document._rid);
    for (const [field, values] of this.byField) this.file(values, document, field);
  }

  /** A document deleted, or the old version of one replaced. */
  removed(document: Document): void {
    for (const [field, values] of this.byField) {
      const rids = values.get(document[field] as Primitive);
      rids?.delete(document._rid);
      if (rids?.size === 0) values.delete(document[field] as Primitive);
    }
  }

  private file(values: Map<Primitive, Set<string>>, document: Document, field: string): void {
    const value = document[field];
    if (isPrimitive(value)) values.set(value, (values.get(value) ?? new Set()).add(document._rid));
  }

  private values(field: string): Map<Primitive, Set<string>> {
    let values = this.byField.get(field);
    if (!values) {
      values = new Map();
      for (const item of this.data.values()) this.file(values, item.read()!, field);
      this.byField.set(field, values);
    }
    return values;
  }

  /** The documents that can meet every condition, when some condition leaves fewer than half the container. */
  candidates(required: Required[]): Document[] | undefined {
    let best: Set<string>[] | undefined;
    let bestSize = this.data.size / 2;
    for (const condition of required) {
      const values = this.values(condition.field);
      const sets = [...new Set(condition.values)].flatMap((value) => values.get(value) ?? []);
      const size = sets.reduce((total, rids) => total + rids.size, 0);
      if (size < bestSize) [best, bestSize] = [sets, size];
    }
    return best && this.documents(best.flatMap((rids) => [...rids]));
  }

  private documents(rids: readonly string[]): Document[] {
    return rids.map((rid) => this.data.get(rid)?.read()).filter((document) => document !== undefined);
  }

  /** The `_rid`s in order: those written since merged in, and those deleted by then left out. */
  private inOrder(): string[] {
    if (this.added.length === 0) return this.ordered;
    const added = this.added.splice(0).sort();
    const merged: string[] = [];
    let [i, j] = [0, 0];
    while (i < this.ordered.length || j < added.length) {
      const rid = j >= added.length || (i < this.ordered.length && this.ordered[i]! < added[j]!) ? this.ordered[i++]! : added[j++]!;
      if (rid !== merged.at(-1) && this.data.has(rid)) merged.push(rid);
    }
    this.ordered = merged;
    return merged;
  }

  /** Up to `count` documents in `_rid` order from the first whose `_rid` is `from` or after it; and whether they reach the end. */
  slice(from: string, count: number): { documents: Document[]; end: boolean } {
    const ordered = this.inOrder();
    const start = firstIndex(ordered, (rid) => rid < from);
    const last = Math.min(ordered.length, start + count);
    return { documents: this.documents(ordered.slice(start, last)), end: last === ordered.length };
  }
}

/** Where a page in `_rid` order starts (`''`: at the first document); undefined where the full run should meet the token and say what is wrong with it. */
function startRid(continuation: QueryOptions['continuation']): string | undefined {
  if (!continuation) return '';
  try {
    const { RID } = continuationTokens.decode(continuation.token);
    return typeof RID === 'string' ? RID : undefined;
  } catch {
    return undefined;
  }
}

/** A page in `_rid` order: the query on a growing slice of the documents from the continuation on, until the page is full or the slice ends. */
function pageInRidOrder(index: DocumentIndex, query: CompiledQuery, options: QueryOptions, from: string, shown: (documents: Document[]) => Document[]) {
  for (let width = options.maxItemCount! * 2; ; width *= 2) {
    const slice = index.slice(from, width);
    const page = query.exec(shown(slice.documents), options) as { continuation: unknown };
    if (page.continuation || slice.end) return page;
  }
}

type QueryParameters = { query: string; parameters?: QueryOptions['parameters'] };
/** How the server's query handler calls the query: a page, and the partition key it was sent with (none: every partition). */
type QueryScope = Pick<QueryOptions, 'maxItemCount' | 'continuation'> & { partitionKey?: Primitive[] };

function query(this: ServerDocuments, parameters: QueryParameters, { partitionKey, ...paging }: QueryScope) {
  const collection = this._parent.read();
  if (!collection) return null;
  const compiled = this._getQuery(parameters.query);
  const shown = (documents: Document[]) => documents.filter((document) => this._shows(document, partitionKey));
  const options: QueryOptions = {
    parameters: parameters.parameters,
    udf: this._userDefinedFunctions(),
    ...paging,
    compositeIndexes: collection.indexingPolicy?.compositeIndexes ?? [],
  };
  try {
    const shape = shapeOf(compiled, options.parameters);
    const index = (this.shortcutIndex ??= new DocumentIndex(this._data));
    const candidates = index.candidates(shape.required);
    if (candidates) return compiled.exec(shown(candidates), options);
    const from = startRid(options.continuation);
    if (shape.inRidOrder && (options.maxItemCount ?? 0) > 0 && from !== undefined) return pageInRidOrder(index, compiled, options, from, shown);
  } catch (error) {
    // As the server's own query method: an error of the query's is the client's.
    (error as { badRequest?: boolean }).badRequest = true;
    throw error;
  }
  // No shortcut fits: the server's own run over every document it shows.
  return itemsClass.default.prototype.query!.call(this, parameters as never, { ...paging, partitionKey } as never);
}

/** Puts the shortcuts into the server's document collections: their queries, and the writes that keep the indexes. */
export function installQueryShortcuts(): void {
  const documents = documentsClass.default.prototype;
  const items = itemsClass.default.prototype;
  if (documents.query === query) return;
  documents.query = query;
  documents._set = function (this: ServerDocuments, document: Document) {
    const stored = items._set!.call(this, document as never) as Document;
    this.shortcutIndex?.written(stored);
    return stored;
  };
  documents.delete = function (this: ServerDocuments, idOrRid: string, partition: unknown, expiredToo?: boolean) {
    const document = this._item('/id', idOrRid, partition, expiredToo).read();
    items.delete!.call(this, idOrRid as never, partition as never, expiredToo as never);
    if (document) this.shortcutIndex?.removed(document);
  };
}
