import type { HttpHandler, HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import { z } from 'zod';
import { authenticate, authorize } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import type { Permission } from '../roles.js';
import type { Idempotency } from '../data/idempotency.js';
import type { Page } from '../data/paging.js';
import type { Created } from '../data/tenant-data.js';
import { recordCaller } from '../data/users-repository.js';
import type { ExpectedVersion } from '../domain/versions.js';
import { notFound } from '../domain/errors.js';
import { ApiError, badRequest } from '../errors.js';
import { translate } from '../messages/catalog.js';
import { parseOrThrow } from '../schemas/validation.js';
import { readJsonObject } from './body.js';
import { errorResponse } from './error-mapper.js';
import { entityTag, expectedVersion, isNotModified } from './etag.js';
import { preferredLanguage, type Language } from './language.js';
import type { PathParameter } from '../schemas/common.js';
import { bodyMayBeOmitted, type DescribedHandler, type OperationDefinition, type SuccessAnswer, type SuccessHeader } from './operation-definition.js';
import { nextPageLink, responseHeaders } from './responses.js';

type Schema = z.ZodType;
type Output<S> = S extends z.ZodType ? z.output<S> : undefined;
type Params<P> = { readonly [Name in keyof P]: string };

const NO_QUERY_PARAMETERS = z.strictObject({});
/** The body of an operation declared without one: none, or `{}`; any field is an unknown field. */
const NO_BODY = z.strictObject({});
/**
 * The Idempotency-Key draft's key: visible ASCII, of a sensible length, without a comma. Azure's host
 * joins a repeated header's values with one, so the comma is how a key sent twice shows: `a,b` would
 * otherwise be taken as a third key.
 */
export const IDEMPOTENCY_KEY = /^[\x21-\x2b\x2d-\x7e]{1,255}$/;

/** What a handler gets: the caller and the request's parts, validated, as plain values. Headers stay here. */
export interface EndpointInput<P, Q, B> {
  principal: Principal;
  params: Params<P>;
  query: Q;
  body: B;
  /** The version If-Match asks for, when the operation honours it. */
  ifMatch: ExpectedVersion;
  /** The Idempotency-Key and the operation it is scoped to, when the operation honours it and one was sent. */
  idempotency: Idempotency | undefined;
  language: Language;
  /** The request's path, canonical (no empty segments, so no trailing slash), from which a Location is built. */
  path: string;
}

/** What a handler answers; the definition's `success` says how it is sent. */
export interface Outcome {
  body?: unknown;
  /** Where what the request made lives, for an answer that declares `Location` and is not `created`. */
  location?: string;
  /** The body is the stored answer to an earlier request with the same Idempotency-Key, for an answer that is not `created`. */
  replayed?: boolean;
  /** A list's page, for an operation that answers a `page`: its items are the body, its cursor the `Link` to the next. */
  page?: Page<unknown>;
  /**
   * What a create made, or the stored answer to an earlier request with the same Idempotency-Key: the
   * body, whose `Location` is the request's path (the collection) and its id.
   */
  created?: Created<{ id: string }>;
}

/**
 * The answer when all goes well, as an endpoint declares it: a list declares the schema of its items
 * as `page`, and is answered as their array with `Link` to the next page. `ETag` is never declared:
 * every answer with a body, which is one resource, carries its version's tag.
 */
export type EndpointSuccess = (Omit<SuccessAnswer, 'headers'> & { headers?: Exclude<SuccessHeader, 'Link' | 'ETag'>[] }) | { status: 200; page: z.ZodType };

export interface EndpointDefinition<P, QS, BS> extends Omit<OperationDefinition, 'success'> {
  permission: Permission;
  success: EndpointSuccess;
  params?: P & Record<string, PathParameter>;
  query?: QS & Schema;
  body?: BS & Schema;
  handle(input: EndpointInput<P, Output<QS>, Output<BS>>): Promise<Outcome>;
}

/** Runs a handler with the headers every answer carries, and every failure through the error mapper. */
export async function respond(
  request: HttpRequest,
  context: InvocationContext,
  run: (language: Language) => Promise<HttpResponseInit>,
): Promise<HttpResponseInit> {
  const language = preferredLanguage(request.headers.get('accept-language'));
  try {
    const response = await run(language);
    const body = response.jsonBody !== undefined || response.body !== undefined;
    return { ...response, headers: Object.assign(responseHeaders(context.invocationId, { body }), response.headers as Record<string, string> | undefined) };
  } catch (error) {
    return errorResponse(error, language, context);
  }
}

/**
 * The request's path without empty segments (so without a trailing slash), from which the URLs an answer
 * names are built: only a path, never the request's host, and never one starting `//`, which a client
 * would read as another host.
 */
export function canonicalPath(url: URL): string {
  return `/${url.pathname.split('/').filter(Boolean).join('/')}`;
}

/** A handler that needs no token, carrying its definition as endpoint() handlers carry theirs. */
export function publicOperation(definition: OperationDefinition, handler: HttpHandler): DescribedHandler {
  return Object.assign(handler, { definition });
}

/**
 * The query parameters, each given once. Azure's host joins a repeated parameter's values with ","
 * (names compared without case), so `request.query` cannot show a repetition; the raw query string
 * in the URL, which Azure keeps, can. So `?q=a&q=b` is refused under any host, never read as `a,b`.
 */
function queryObject(request: HttpRequest, url: URL): Record<string, string> {
  const seen = new Set<string>();
  for (const name of url.searchParams.keys()) {
    if (seen.has(name.toLowerCase())) throw badRequest('repeatedQueryParameter', { name: name.slice(0, 100) });
    seen.add(name.toLowerCase());
  }
  // No prototype: a parameter named __proto__ must stay a parameter (and be refused as unknown).
  const query = Object.create(null) as Record<string, string>;
  for (const [name, value] of request.query) query[name] = value;
  return query;
}

// Free text, in which a comma is only a character; every other parameter takes a single value.
const FREE_TEXT_PARAMETERS = new Set(['q']);

/**
 * The query, validated. A refused value with a comma in a single-valued parameter was meant as a
 * list (`status=Active,OnHold`): its detail says so, rather than only that the value is invalid.
 */
function parseQuery(schema: Schema, query: Record<string, string>, language: Language): unknown {
  try {
    return parseOrThrow(schema, query, language, 'query');
  } catch (error) {
    if (!(error instanceof ApiError) || !error.options.details) throw error;
    const declared = schema instanceof z.ZodObject ? schema.shape : {};
    const details = error.options.details.map((detail) => {
      const name = detail.path.replace(/^query\./, '');
      const list = Object.hasOwn(declared, name) && !FREE_TEXT_PARAMETERS.has(name) && query[name]?.includes(',') === true;
      return list ? { path: detail.path, message: translate('oneValueOnly', language, { name }) } : detail;
    });
    throw badRequest('validationFailed', {}, details);
  }
}

/** The path parameters, each of its declared form; any other value cannot name a resource, so it is a 404. */
export function pathParameters<P extends Record<string, PathParameter>>(declared: P | undefined, request: HttpRequest): Params<P> {
  const params: Record<string, string> = {};
  for (const [name, { schema, notFound: messageKey }] of Object.entries(declared ?? {})) {
    const value = request.params[name] ?? '';
    if (!schema.safeParse(value).success) {
      throw notFound(messageKey, { id: value.slice(0, 100), method: request.method, path: new URL(request.url).pathname.slice(0, 200) });
    }
    params[name] = value;
  }
  return params as Params<P>;
}

function idempotency(request: HttpRequest, context: InvocationContext): Idempotency | undefined {
  const key = request.headers.get('idempotency-key');
  if (key === null) return undefined;
  if (!IDEMPOTENCY_KEY.test(key)) throw new ApiError(400, 'invalidIdempotencyKey');
  return { key, scope: context.functionName };
}

/** `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and the link to what replaces the operation. */
function deprecationHeaders({ since, sunset, link }: NonNullable<OperationDefinition['deprecated']>): Record<string, string> {
  return {
    Deprecation: `@${Math.floor(Date.parse(since) / 1000)}`,
    Sunset: new Date(sunset).toUTCString(),
    ...(link ? { Link: `<${link}>; rel="deprecation"` } : {}),
  };
}

/** A page's items as sent: each with its `etag` where the page's item schema has one (listedWithETag). */
function pageItems(definition: OperationDefinition, items: unknown[]): unknown[] {
  const { body } = definition.success;
  if (!(body instanceof z.ZodArray && body.element instanceof z.ZodObject && 'etag' in body.element.shape)) return items;
  return items.map((item) => {
    // Copied by hand: on Node 20 an object spread here costs the page about as much again as the ETags' hashes.
    const shown: Record<string, unknown> = {};
    for (const name of Object.keys(item as object)) shown[name] = (item as Record<string, unknown>)[name];
    shown.etag = entityTag(item);
    return shown;
  });
}

/** The resource's fields of a body that shows more, in the resource's order, as a read of it shows them. */
function resourceIn(resource: z.ZodObject, body: unknown): unknown {
  return Object.fromEntries(Object.keys(resource.shape).map((name) => [name, (body as Record<string, unknown>)[name]]));
}

/** The successful answer the definition declares, made from what the handler answered. */
function answer(definition: OperationDefinition, outcome: Outcome, request: HttpRequest, url: URL, path: string): HttpResponseInit {
  const { status, headers: declared = [], versionOf } = definition.success;
  const { page, created } = outcome;
  const body = page ? pageItems(definition, page.items) : created ? created.resource : outcome.body;
  const headers: Record<string, string> = {};
  if (declared.includes('ETag')) {
    // The resource's version, as a read of it tags it: a body that shows more than the resource (a secret) names the resource's.
    const tag = entityTag(versionOf ? resourceIn(versionOf, body) : body);
    if (definition.honours?.includes('If-None-Match') && isNotModified(request.headers.get('if-none-match'), tag)) {
      return { status: 304, headers: { ETag: tag } };
    }
    headers.ETag = tag;
  }
  if (declared.includes('Location')) headers.Location = created ? `${path}/${created.resource.id}` : outcome.location!;
  if (declared.includes('Link')) Object.assign(headers, nextPageLink(url, path, page?.nextCursor));
  if (definition.success.retryAfterSeconds !== undefined) headers['Retry-After'] = String(definition.success.retryAfterSeconds);
  if (created ? created.replayed : outcome.replayed) headers['Idempotent-Replayed'] = 'true';
  if (definition.deprecated) {
    const { Link: deprecationLink, ...deprecation } = deprecationHeaders(definition.deprecated);
    Object.assign(headers, deprecation);
    if (deprecationLink) headers.Link = headers.Link ? `${headers.Link}, ${deprecationLink}` : deprecationLink;
  }
  return status === 204 ? { status, headers } : { status, jsonBody: body, headers };
}

/**
 * The definition as the HTTP edge answers by it and the API description states it. A page is the
 * array of its items, with `Link`. Any other answer with a body is one resource (the contract's
 * single-resource response) and carries the ETag of its version: the tag a read of it gives right
 * after, which the client states its next precondition with (If-Match, If-None-Match).
 */
function described<P, QS, BS>(definition: EndpointDefinition<P, QS, BS>): Omit<EndpointDefinition<P, QS, BS>, 'success'> & { success: SuccessAnswer } {
  const { success } = definition;
  if ('page' in success) return { ...definition, success: { status: success.status, body: z.array(success.page), headers: ['Link'] } };
  const { headers = [] } = success;
  return { ...definition, success: success.body === undefined ? success : { ...success, headers: [...headers, 'ETag'] } };
}

/**
 * Wraps an endpoint: verify the token, check the role, record the caller, validate query and body,
 * read the headers the endpoint honours and its path parameters, then handle, and answer as the
 * definition declares. Authentication comes first so that an anonymous caller learns nothing about
 * the API's rules. Below this, nothing sees a header.
 */
export function endpoint<P = Record<never, PathParameter>, QS extends Schema | undefined = undefined, BS extends Schema | undefined = undefined>(
  declared: EndpointDefinition<P, QS, BS>,
): DescribedHandler {
  const definition = described(declared);
  const honours = new Set(definition.honours);
  // An operation declared without a body takes none: a body sent all the same is read as any body, and must be `{}`.
  const bodySchema = definition.body ?? NO_BODY;
  const bodyOptions = { mayBeOmitted: bodyMayBeOmitted(bodySchema) };
  const handler: HttpHandler = (request, context) =>
    respond(request, context, async (language) => {
      const principal = await authenticate(request);
      authorize(principal, definition.permission);
      // Only a caller the API serves becomes one of its recorded users.
      await recordCaller(principal.tenantId, principal);
      // Parsed once: the raw query string for repetitions, the path for Location.
      const url = new URL(request.url);
      const query = parseQuery(definition.query ?? NO_QUERY_PARAMETERS, queryObject(request, url), language) as Output<QS>;
      const read = parseOrThrow(bodySchema, await readJsonObject(request, bodyOptions), language);
      const body = (definition.body ? read : undefined) as Output<BS>;
      const path = canonicalPath(url);
      const outcome = await definition.handle({
        principal,
        query,
        body,
        ifMatch: honours.has('If-Match') ? expectedVersion(request.headers.get('if-match')) : undefined,
        idempotency: honours.has('Idempotency-Key') ? idempotency(request, context) : undefined,
        params: pathParameters(definition.params, request),
        language,
        path,
      });
      return answer(definition, outcome, request, url, path);
    });
  return Object.assign(handler, { definition });
}
