import type { HttpHandler, HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import { z } from 'zod';
import { authenticate, authorize } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import type { Permission } from '../auth/roles.js';
import { recordCaller } from '../data/users-repository.js';
import { badRequest } from '../errors.js';
import type { OperationDocs } from '../openapi/operation.js';
import { parseOrThrow } from '../validation.js';
import { readJsonObject } from './body.js';
import { errorResponse } from './error-mapper.js';
import { preferredLanguage, type Language } from './language.js';
import { responseHeaders } from './responses.js';

type Schema = z.ZodType;
const NO_QUERY_PARAMETERS = z.strictObject({});
type Output<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface EndpointInput<Q, B> {
  principal: Principal;
  query: Q;
  body: B;
  request: HttpRequest;
  language: Language;
  context: InvocationContext;
}

/** What an endpoint accepts and who may call it: the handler's contract, also read to describe the API. */
export interface EndpointDefinition<QS extends Schema | undefined, BS extends Schema | undefined> {
  permission: Permission;
  query?: QS;
  body?: BS;
  /** What the API description (shared/openapi) says about the endpoint: summary, answers, errors. */
  docs?: OperationDocs;
  handle(input: EndpointInput<Output<QS>, Output<BS>>): Promise<HttpResponseInit>;
}

export type Endpoint = HttpHandler & { readonly definition: EndpointDefinition<Schema | undefined, Schema | undefined> };

function queryObject(request: HttpRequest): Record<string, string> {
  // No prototype: a parameter named __proto__ must stay a parameter (and be refused as unknown).
  const query = Object.create(null) as Record<string, string>;
  for (const [name, value] of request.query) {
    if (Object.hasOwn(query, name)) throw badRequest('repeatedQueryParameter', { name: name.slice(0, 100) });
    query[name] = value;
  }
  return query;
}

/** Runs a handler with the response headers every answer carries, and every failure through the error mapper. */
export async function respond(
  request: HttpRequest,
  context: InvocationContext,
  run: (language: Language) => Promise<HttpResponseInit>,
): Promise<HttpResponseInit> {
  const language = preferredLanguage(request.headers.get('accept-language'));
  try {
    const response = await run(language);
    return { ...response, headers: Object.assign(responseHeaders(context.invocationId), response.headers as Record<string, string> | undefined) };
  } catch (error) {
    return errorResponse(error, language, context);
  }
}

/**
 * Wraps an endpoint: verify the token, record the caller, check the role, validate query and
 * body, then handle. Authentication comes first so that an anonymous caller learns nothing about
 * the API's rules.
 */
export function endpoint<QS extends Schema | undefined = undefined, BS extends Schema | undefined = undefined>(
  definition: EndpointDefinition<QS, BS>,
): Endpoint {
  const handler: HttpHandler = (request, context) =>
    respond(request, context, async (language) => {
      const principal = await authenticate(request);
      await recordCaller(principal);
      authorize(principal, definition.permission);
      const query = parseOrThrow(definition.query ?? NO_QUERY_PARAMETERS, queryObject(request), language, 'query');
      const body = definition.body ? parseOrThrow(definition.body, await readJsonObject(request), language) : undefined;
      return definition.handle({ principal, query, body, request, language, context } as EndpointInput<Output<QS>, Output<BS>>);
    });
  return Object.assign(handler, { definition: definition });
}
