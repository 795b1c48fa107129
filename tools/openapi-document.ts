/**
 * Builds the OpenAPI 3.1 document from the app's HTTP registrations: routes, methods and names come
 * from the `app.http` calls, permissions and the query and body schemas from each handler's
 * definition (endpoint()), answers and errors from its `docs`, and every schema from zod. Nothing
 * here lists the API a second time; it only says how each part is written in OpenAPI.
 */
import { z } from 'zod';
import { PERMISSIONS, ROLES, type Permission } from '../shared/roles.js';
import { TOKEN_REFUSAL_REASONS } from '../shared/auth/token-validator.js';
import { ApiError, STATUS_NAMES } from '../shared/errors.js';
import { FAILED_DELIVERIES_TO_DISABLE } from '../shared/domain/webhooks.js';
import { IDEMPOTENCY_KEY } from '../shared/http/endpoint.js';
import { API_BASE_PATH } from '../shared/http/routes.js';
import { bodyMayBeOmitted, type HonouredHeader, type OperationDefinition } from '../shared/http/operation-definition.js';
import { translate, type MessageKey } from '../shared/messages/catalog.js';
import { errorBody, pagingParameters } from '../shared/schemas/common.js';
import { EVENT_BODIES } from '../shared/schemas/event-payloads.js';
import { EVENT_TYPES, eventId } from '../shared/schemas/events.js';
import { SETTINGS } from '../shared/settings/catalog.js';
import { parseOrThrow } from '../shared/schemas/validation.js';
import { ANSWER_BODY_LIMIT, ATTEMPT_TIMEOUT_MS } from '../shared/webhooks/sender.js';
import { NAMED_SCHEMAS } from '../shared/openapi/components.js';

type Json = Record<string, unknown>;
type Io = 'input' | 'output';

/** An HTTP function as `app.http` registered it. */
export interface HttpRegistration {
  name: string;
  route: string;
  methods: string[];
  handler: unknown;
}

// Entra ID's endpoints for work and school accounts of any tenant; a single-tenant client uses its tenant id instead.
const AUTHORITY = 'https://login.microsoftonline.com/organizations/oauth2/v2.0';
const USER_SCOPE = 'api://{clientId}/access_as_user';
const EXAMPLE_REQUEST_ID = '7d1e9a52-4c3b-4f6e-9a8d-2b1c0e5f4a39';
const JSON_MEDIA_TYPE = 'application/json';

const TAGS = [
  { name: 'Projects', segments: ['projects'], description: 'Projects and their members. Deleting a project deletes its tasks.' },
  { name: 'Tasks', segments: ['tasks'], description: "Tasks, each in one project; an Archived project's tasks are read-only." },
  { name: 'Users', segments: ['users'], description: 'The users who have called the API, and the tenant directory through Microsoft Graph.' },
  { name: 'RAG index', segments: ['rag'], description: 'Rebuilds of the retrieval-augmented-generation index, run as queued jobs.' },
  {
    name: 'Webhooks',
    segments: ['webhooks'],
    description: 'Subscriptions to events, signed as the Standard Webhooks specification says, and their deliveries. LMS.Admin only.',
  },
  { name: 'API description', segments: ['openapi.json', 'docs'], description: 'This document and its reference page. No token needed.' },
];

const REASONS: Record<number, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content' };

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });
const parameter = (name: string) => ({ $ref: `#/components/parameters/${name}` });

const RESPONSE_HEADERS: Record<string, Json> = {
  ETag: {
    description:
      "Strong entity tag of the resource's version: the one a read of it answers (a secret shown beside the resource is no part of it). " +
      'Send it back in If-Match to change only this version.',
    required: true,
    schema: { type: 'string' },
  },
  Location: { description: 'Path of the resource created (or of the job started).', required: true, schema: { type: 'string' } },
  Link: {
    description:
      'RFC 8288 link to the next page, `</api/…?…&cursor=…>; rel="next"`: a path on the API\'s own host, to resolve against the URL ' +
      'requested (never an absolute URL); absent on the last page.',
    schema: { type: 'string' },
  },
  IdempotentReplayed: {
    description: '`true` when this is the stored answer to an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
  RetryAfter: { description: 'Seconds to wait before trying again.', required: true, schema: { type: 'string', pattern: '^\\d+$' } },
  RetryAfterAccepted: {
    description: 'Seconds to wait before looking at `Location` for the first time: the work seldom shows progress sooner.',
    required: true,
    schema: { type: 'string', pattern: '^\\d+$' },
  },
  RetryAfterContended: { description: 'With `changeContended`: seconds to wait before trying again.', schema: { type: 'string', pattern: '^\\d+$' } },
  WWWAuthenticate: {
    description:
      '`Bearer error="invalid_token"`, with `error_description="<the English message>"` when a token whose signature is good ' +
      'was refused for a reason it shows (expired, not valid yet, another audience, another issuer, an ID token); or ' +
      '`Bearer error="insufficient_claims", claims="<base64>"` when the client must sign the user in again with those claims.',
    required: true,
    schema: { type: 'string' },
  },
  WWWAuthenticateScope: {
    description: 'With `scopeMissing`: `Bearer error="insufficient_scope", scope="api://<clientId>/access_as_user"`, the scope to ask for (RFC 6750).',
    schema: { type: 'string' },
  },
  XRequestId: { description: 'Identifies the request in the service log; quote it when reporting a problem.', required: true, schema: { type: 'string' } },
  Deprecation: { description: 'RFC 9745: when the operation was deprecated, as `@<Unix seconds>`.', required: true, schema: { type: 'string' } },
  Sunset: { description: 'RFC 8594: the HTTP date after which the operation may be gone.', required: true, schema: { type: 'string' } },
  DeprecationLink: {
    description: 'RFC 8288 links: `<…>; rel="deprecation"` to what replaces this operation and, on a list, `<…?cursor=…>; rel="next"` while more pages follow.',
    required: true,
    schema: { type: 'string' },
  },
};

const HONOURED_HEADERS: Record<HonouredHeader, { component: string; definition: Json }> = {
  'If-Match': {
    component: 'IfMatch',
    definition: {
      name: 'If-Match',
      in: 'header',
      description:
        'Change only if the resource still has one of these ETags (or `*`: if it exists); otherwise 412. Weak tags ' +
        'never match. Without it the last write wins.',
      schema: { type: 'string' },
      example: '"3q2-7w8eS0uYh1uR3vYJbqkEx5Nw4VqP"',
    },
  },
  'If-None-Match': {
    component: 'IfNoneMatch',
    definition: {
      name: 'If-None-Match',
      in: 'header',
      description: 'Answer 304 without a body when the resource still has one of these ETags.',
      schema: { type: 'string' },
      example: '"3q2-7w8eS0uYh1uR3vYJbqkEx5Nw4VqP"',
    },
  },
  'Idempotency-Key': {
    component: 'IdempotencyKey',
    definition: {
      name: 'Idempotency-Key',
      in: 'header',
      description:
        'Makes the create safe to retry: the same key from the same caller within 24 hours returns the first answer ' +
        'and creates nothing (`Idempotent-Replayed: true`); with another body it is a 422. Sent once, as 1–255 visible ASCII ' +
        "characters other than a comma (Azure's host joins a repeated header's values with one).",
      schema: { type: 'string', pattern: IDEMPOTENCY_KEY.source },
      example: '8d0c7a52-onboarding',
    },
  },
};

/** Message parameters shown as `{name}`, so that each message reads as the rule it states. */
const PLACEHOLDERS = new Proxy({}, { get: (_target, name) => `{${String(name)}}` }) as Record<string, string>;

// A named schema carries its name as zod's `id` (what `.meta({ id })` sets), so that z.toJSONSchema moves it
// to $defs and refers to it there; its other metadata (descriptions) stays.
for (const [schema, { name }] of NAMED_SCHEMAS) z.globalRegistry.add(schema, { ...z.globalRegistry.get(schema), id: name });

/** zod bounds every integer by Number's safe range; on every count that is noise for readers and client generators. */
function dropSafeIntegerBounds({ jsonSchema }: { jsonSchema: { minimum?: number; maximum?: number } }): void {
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
}

/**
 * The document's shared parts, gathered as operations use them: the named schemas, and the error
 * examples (one per status and message, shared by every operation that can answer with them).
 */
class Components {
  readonly schemas: Record<string, Json> = {};
  readonly examples: Record<string, Json> = {};

  /** A zod schema as JSON Schema; named schemas in it become components it refers to. */
  schema(schema: z.ZodType, io: Io): Json {
    const converted = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', override: dropSafeIntegerBounds });
    const { $defs = {}, ...root } = JSON.parse(JSON.stringify(converted).replaceAll('"#/$defs/', '"#/components/schemas/')) as Json & {
      $defs?: Record<string, Json>;
    };
    delete root.$schema;
    for (const [name, definition] of Object.entries($defs)) {
      const known = this.schemas[name];
      if (known && JSON.stringify(known) !== JSON.stringify(definition))
        throw new Error(`The schema named ${name} reads differently as ${io}: give its request and response forms their own names`);
      this.schemas[name] = definition;
    }
    return root;
  }

  /** A JSON body: its schema and the example its named schema (or, for a list, its items' schema) has. */
  jsonContent(schema: z.ZodType, io: Io): Json {
    const list = schema instanceof z.ZodArray;
    const named = NAMED_SCHEMAS.get(list ? (schema.element as z.ZodType) : schema);
    if (!named) throw new Error(`A JSON body schema has no name: add it to NAMED_SCHEMAS in shared/openapi/components.ts`);
    return { schema: this.schema(schema, io), example: list ? [named.example] : named.example };
  }

  /** References to the examples of these failures, which are added to the shared ones. */
  errorExamples(status: number, keys: MessageKey[], messages: string[]): Json {
    return Object.fromEntries(
      keys.map((key, index) => {
        const name = `${status}.${key}`;
        const value = {
          error: STATUS_NAMES[status],
          message: messages[index],
          status,
          requestId: EXAMPLE_REQUEST_ID,
          ...(key === 'validationFailed' ? { details: validationDetailsExample() } : {}),
          ...(key === 'ragJobActive' ? { activeJobId: PLACEHOLDERS.id } : {}),
        };
        this.examples[name] = { summary: messages[index], value };
        return [key, { $ref: `#/components/examples/${name}` }];
      }),
    );
  }
}

/** The number a query parameter's text is parsed into (`limit`), if it is one: OpenAPI describes such a parameter as that number. */
function numberBehind(schema: z.ZodType): z.ZodType | undefined {
  const def = schema._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType; out?: z.ZodType };
  if (def.type === 'number') return schema;
  for (const inner of [def.innerType, def.in, def.out]) {
    const found = inner && numberBehind(inner);
    if (found) return found;
  }
  return undefined;
}

function queryParameters(query: z.ZodType | undefined, components: Components): Json[] {
  if (!(query instanceof z.ZodObject)) return [];
  return Object.entries(query.shape as Record<string, z.ZodType>).map(([name, schema]) => {
    const number = numberBehind(schema);
    const { description, ...parameterSchema } = components.schema(number ?? schema, number ? 'output' : 'input');
    const absent = schema.safeParse(undefined);
    if (absent.success && absent.data !== undefined) parameterSchema.default = absent.data;
    return { name, in: 'query', required: !absent.success, ...(description ? { description } : {}), schema: parameterSchema };
  });
}

/** The route's parameters, each as the definition declares it; a route and a definition that disagree are a mistake. */
function pathParameters(registration: HttpRegistration, declared: OperationDefinition['params'] = {}, components: Components): Json[] {
  const names = [...registration.route.matchAll(/\{(\w+)\}/g)].map(([, name]) => name!);
  if (names.join() !== Object.keys(declared).join()) {
    throw new Error(`The function ${registration.name} declares the path parameters [${Object.keys(declared).join()}] for the route ${registration.route}`);
  }
  return names.map((name) => {
    const { schema, example } = declared[name]!;
    return { name, in: 'path', required: true, schema: components.schema(schema, 'input'), example };
  });
}

function validationDetailsExample() {
  try {
    parseOrThrow(z.strictObject({}), { stauts: 'Active' }, 'en', 'query');
  } catch (error) {
    if (error instanceof ApiError) return error.options.details;
  }
  throw new Error('A misspelt query parameter was not refused');
}

/** Every failure the operation can answer with, by status: those its traits bring, then its own. */
function failures(described: OperationDefinition): Map<number, MessageKey[]> {
  const found = new Map<number, MessageKey[]>();
  const add = (status: number, ...keys: MessageKey[]) => found.set(status, [...(found.get(status) ?? []), ...keys]);
  const honours = new Set(described.honours);
  if (described.permission) {
    add(400, 'validationFailed', 'repeatedQueryParameter');
    add(401, 'tokenMissing', 'tokenInvalid', ...TOKEN_REFUSAL_REASONS, 'tokenInQuery');
    add(403, 'scopeMissing', 'forbidden');
  }
  // A path parameter of any other form than its resource's ids names nothing: that resource's 404.
  for (const parameter of Object.values(described.params ?? {})) add(404, parameter.notFound);
  // An operation of endpoint() (one that needs a token) reads a body sent to it even where it takes none, which must then be `{}`.
  if (described.body || described.permission) {
    add(400, 'invalidJson', 'invalidUtf8', 'bodyNotObject', 'bodyIncomplete');
    add(411, 'lengthRequired');
    add(413, 'bodyTooLarge');
    add(415, 'unsupportedMediaType');
  }
  if (described.query instanceof z.ZodObject && described.query.shape.cursor === pagingParameters.cursor) add(400, 'invalidCursor', 'cursorForOtherQuery');
  if (honours.has('If-Match')) {
    add(400, 'invalidIfMatch');
    add(409, 'changeContended');
    add(412, 'preconditionFailed');
  }
  if (honours.has('Idempotency-Key')) {
    add(400, 'invalidIdempotencyKey');
    add(422, 'idempotencyKeyReused');
  }
  for (const [status, keys] of Object.entries(described.docs.errors ?? {})) add(Number(status), ...(keys ?? []));
  add(500, 'internalError');
  if (described.permission) {
    add(500, 'notConfigured');
    add(503, 'identityProviderUnavailable', 'databaseUnavailable');
  }
  return new Map([...found].sort(([a], [b]) => a - b));
}

function failureResponse(status: number, keys: MessageKey[], components: Components): Json {
  const messages = keys.map((key) => translate(key, 'en', PLACEHOLDERS));
  return {
    description: `${STATUS_NAMES[status]}:\n\n${messages.map((message) => `- ${message}`).join('\n')}`,
    headers: {
      'X-Request-Id': header('XRequestId'),
      ...(status === 401 ? { 'WWW-Authenticate': header('WWWAuthenticate') } : {}),
      ...(keys.includes('scopeMissing') ? { 'WWW-Authenticate': header('WWWAuthenticateScope') } : {}),
      ...(status === 503 ? { 'Retry-After': header('RetryAfter') } : {}),
      ...(keys.includes('changeContended') ? { 'Retry-After': header('RetryAfterContended') } : {}),
    },
    // As every answer's, read as the API writes it: a field it does not declare is not there (additionalProperties: false).
    content: { [JSON_MEDIA_TYPE]: { schema: components.schema(errorBody, 'output'), examples: components.errorExamples(status, keys, messages) } },
  };
}

function successResponses(described: OperationDefinition, components: Components): Json {
  const { status, body, headers = [], mediaTypes = [JSON_MEDIA_TYPE] } = described.success;
  const honours = new Set(described.honours);
  const content = Object.fromEntries(
    mediaTypes.map((mediaType) => [
      mediaType,
      mediaType === JSON_MEDIA_TYPE && body ? components.jsonContent(body, 'output') : body ? { schema: components.schema(body, 'output') } : {},
    ]),
  );
  const responses: Json = {
    [status]: {
      description: REASONS[status],
      headers: {
        'X-Request-Id': header('XRequestId'),
        ...Object.fromEntries(headers.map((name) => [name, header(name)])),
        ...(described.success.retryAfterSeconds === undefined ? {} : { 'Retry-After': header('RetryAfterAccepted') }),
        ...(honours.has('Idempotency-Key') ? { 'Idempotent-Replayed': header('IdempotentReplayed') } : {}),
        ...(described.deprecated ? { Deprecation: header('Deprecation'), Sunset: header('Sunset') } : {}),
        ...(described.deprecated?.link ? { Link: header('DeprecationLink') } : {}),
      },
      ...(status === 204 ? {} : { content }),
    },
  };
  if (honours.has('If-None-Match')) {
    responses[304] = {
      description: 'Not Modified: If-None-Match names the current version.',
      headers: { 'X-Request-Id': header('XRequestId'), ETag: header('ETag') },
    };
  }
  return responses;
}

function rolesLine(permission: Permission): string {
  return `**Roles:** ${PERMISSIONS[permission].join(', ')} (permission \`${permission}\`).`;
}

function deprecationLine({ since, sunset, link }: NonNullable<OperationDefinition['deprecated']>): string {
  return `**Deprecated** since ${since.slice(0, 10)}; it will be removed on ${sunset.slice(0, 10)}.${link ? ` See ${link}.` : ''}`;
}

function operation(registration: HttpRegistration, components: Components): Json {
  const described = (registration.handler as { definition?: OperationDefinition }).definition;
  if (!described) throw new Error(`The function ${registration.name} has no definition: make its handler with endpoint() or publicOperation()`);
  const { docs, permission, deprecated } = described;
  const parameters = [
    ...pathParameters(registration, described.params, components),
    ...queryParameters(described.query, components),
    ...(described.honours ?? []).map((name) => parameter(HONOURED_HEADERS[name].component)),
  ];
  const description = [deprecated && deprecationLine(deprecated), docs.description, permission && rolesLine(permission)].filter(Boolean).join('\n\n');
  return {
    operationId: registration.name.replace(/-(\w)/g, (_match, letter: string) => letter.toUpperCase()),
    summary: docs.summary,
    ...(description ? { description } : {}),
    tags: [tagOf(registration.route).name],
    ...(deprecated ? { deprecated: true } : {}),
    ...(permission ? {} : { security: [] }),
    ...(parameters.length ? { parameters } : {}),
    ...(described.body
      ? { requestBody: { required: !bodyMayBeOmitted(described.body), content: { [JSON_MEDIA_TYPE]: components.jsonContent(described.body, 'input') } } }
      : {}),
    responses: {
      ...successResponses(described, components),
      ...Object.fromEntries([...failures(described)].map(([status, keys]) => [status, failureResponse(status, keys, components)])),
    },
  };
}

function tagOf(route: string): { name: string; description?: string } {
  const segment = route.split('/')[0] ?? '';
  return TAGS.find((tag) => tag.segments.includes(segment)) ?? { name: segment };
}

/** A catch-all route (`{*path}`) is no operation: it answers what no operation matches. */
function isCatchAll(route: string): boolean {
  return route.includes('{*');
}

const METHOD_ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

function rolesTable(): string {
  const rows = Object.entries(PERMISSIONS).map(
    ([permission, roles]) => `| \`${permission}\` | ${ROLES.map((role) => ((roles as readonly string[]).includes(role) ? 'yes' : '')).join(' | ')} |`,
  );
  return [`| permission | ${ROLES.join(' | ')} |`, `|---|${ROLES.map(() => '---').join('|')}|`, ...rows].join('\n');
}

function overview(): string {
  return `The REST API of the learning-management platform: projects, tasks, users and the rebuild of the RAG index.

**Authentication.** Every operation except this document and its reference page needs \`Authorization: Bearer <token>\`: a Microsoft Entra ID access token for the API (audience \`api://{clientId}\`, where \`{clientId}\` is the API's application id). A user (delegated) token must carry the scope \`access_as_user\`; an app-only token (client credentials, scope \`api://{clientId}/.default\`) is authorised by the app roles in its \`roles\` claim. A token in the query string is refused.

**Roles.** The \`roles\` claim decides what a caller may do:

${rolesTable()}

**Errors** are JSON objects \`{ error, message, status, requestId }\`, plus \`details: [{ path, message }]\` for validation errors; some carry more
(\`claims\`, \`activeJobId\`). Messages are in Japanese when \`Accept-Language\` prefers \`ja\`. Unknown query parameters and unknown body fields are a 400.
A method that a path of this document does not list is a 405 whose \`Allow\` names those it does; a path it does not have is a 404, and a path
outside \`/api\` a 404 saying where the API is.

**Requests.** Give each query parameter once, with one value: a repeated parameter, or a comma list in one that takes a single value,
is a 400 (in \`q\` a comma is text). Send a body with \`Content-Length\`: Azure's Functions host hands a chunked body to the API empty, so one is a 411.
A body whose fields are all optional may be left out (no content, \`Content-Length: 0\`): no body means every default.
An operation without a request body takes none: a body sent to it all the same is read as any body (JSON, or a 415) and must be \`{}\`:
each field in it is unknown (400).

**Lists** are JSON arrays, paged with \`limit\` and an opaque \`cursor\`; a \`Link: </api/…?…&cursor=…>; rel="next"\` header points at the next page,
as a path on the API's own host (resolve it against the URL requested). No URL the API answers with is built from the request's \`Host\`.

**Changes.** Single resources carry an \`ETag\`: the resource's version, the same a read of it answers (after a create, an action or a
rotation too); a list's items carry the same tag as \`etag\`, where the resource has a read of its own. \`PUT\` and \`DELETE\` honour
\`If-Match\` (412 when it no longer matches) and reads honour \`If-None-Match\` (304).
Creates honour \`Idempotency-Key\`.`;
}

/**
 * What the API sends to receivers, as OpenAPI 3.1's `webhooks` describe it: one entry per event type,
 * its body, and the Standard Webhooks headers every delivery carries (docs/webhooks.md). The parts the
 * entries share are components they refer to: the headers, each body, the answers.
 */
function webhooks(components: Components): { webhooks: Json; parameters: Json; requestBodies: Json; responses: Json } {
  const parameters = {
    WebhookId: {
      name: 'webhook-id',
      in: 'header',
      required: true,
      description: "The event's id, the same on every attempt of every delivery of it: de-duplicate on it. `GET /api/events/{eventId}` reads it.",
      schema: components.schema(eventId, 'output'),
    },
    WebhookTimestamp: {
      name: 'webhook-timestamp',
      in: 'header',
      required: true,
      description: "The attempt's time, Unix seconds (a retry has its own): refuse one far from now, to defeat replays.",
      schema: { type: 'string', pattern: '^\\d+$' },
    },
    WebhookSignature: {
      name: 'webhook-signature',
      in: 'header',
      required: true,
      description:
        '`v1,<base64 of HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`, keyed with the bytes the secret holds after `whsec_` ' +
        '(base64), for each secret still signing, space-separated: after a rotation the replaced secrets sign too, for 24 hours. ' +
        'Check it against the raw body, before parsing it, with any Standard Webhooks library.',
      schema: { type: 'string' },
    },
  };
  const responses = {
    WebhookReceived: {
      description: `Received: the delivery succeeded. Only the status counts; a body is read up to ${ANSWER_BODY_LIMIT / 1024} KiB and dropped.`,
    },
    WebhookGone: { description: 'Gone: the subscription is switched off at once, and receives nothing until switched on again.' },
  };
  const requestBodies: Record<string, Json> = {};
  // The default schedule, as the setting spells it: `5s, 5m, 30m, …`.
  const retryWaits = SETTINGS.WEBHOOKS_RETRY_SCHEDULE.default.split(',').join(', ');
  const entries = EVENT_TYPES.map((type): [string, Json] => {
    const { schema, summary } = EVENT_BODIES[type];
    const body = NAMED_SCHEMAS.get(schema)!.name;
    // No example: the reference page makes one from the schema, and the clients' types need none.
    requestBodies[body] ??= { required: true, content: { [JSON_MEDIA_TYPE]: { schema: components.schema(schema, 'output') } } };
    const to = type === 'webhook.ping' ? 'the subscription pinged, only' : `each subscription to \`${type}\` that is switched on`;
    const post = {
      summary,
      description:
        `POSTed to ${to}, at least once. An answer other than 2XX within ${ATTEMPT_TIMEOUT_MS / 1000} s (redirects are not followed) is a failed ` +
        `attempt, tried again after ${retryWaits}; ${FAILED_DELIVERIES_TO_DISABLE} deliveries in a row that end Failed switch the subscription off.`,
      tags: ['Webhooks'],
      security: [],
      parameters: Object.keys(parameters).map(parameter),
      requestBody: { $ref: `#/components/requestBodies/${body}` },
      responses: { '2XX': { $ref: '#/components/responses/WebhookReceived' }, '410': { $ref: '#/components/responses/WebhookGone' } },
    };
    return [type, { post }];
  });
  return { webhooks: Object.fromEntries(entries), parameters, requestBodies, responses };
}

/** An operation's registration with its route below the API's base path, as the document's paths are written (below its server URL). */
function belowApiBase(registration: HttpRegistration): HttpRegistration {
  const base = `${API_BASE_PATH}/`;
  if (!registration.route.startsWith(base))
    throw new Error(`The function ${registration.name} registers ${registration.route}: make its route with apiRoute()`);
  return { ...registration, route: registration.route.slice(base.length) };
}

export function buildOpenApiDocument(registrations: HttpRegistration[], options: { version: string; routePrefix: string }): Json {
  const components = new Components();
  const tagIndex = (route: string) => TAGS.findIndex((tag) => tag.name === tagOf(route).name);
  const operations = registrations
    .filter((registration) => !isCatchAll(registration.route))
    .map(belowApiBase)
    .flatMap((registration) => registration.methods.map((method) => ({ registration, method: method.toUpperCase() })))
    .sort(
      (a, b) =>
        tagIndex(a.registration.route) - tagIndex(b.registration.route) ||
        a.registration.route.localeCompare(b.registration.route) ||
        METHOD_ORDER.indexOf(a.method) - METHOD_ORDER.indexOf(b.method),
    );
  const paths: Record<string, Json> = {};
  for (const { registration, method } of operations) {
    (paths[`/${registration.route}`] ??= {})[method.toLowerCase()] = operation(registration, components);
  }
  const sent = webhooks(components);
  return {
    openapi: '3.1.0',
    info: { title: 'LMS Platform API', version: options.version, description: overview() },
    servers: [{ url: `/${[options.routePrefix, API_BASE_PATH].filter(Boolean).join('/')}`, description: 'The deployment that serves this document' }],
    tags: TAGS.map(({ name, description }) => ({ name, description })),
    security: [{ entra: [USER_SCOPE] }, { bearer: [] }],
    paths,
    webhooks: sent.webhooks,
    components: {
      schemas: Object.fromEntries(Object.entries(components.schemas).sort(([a], [b]) => a.localeCompare(b))),
      examples: Object.fromEntries(Object.entries(components.examples).sort(([a], [b]) => a.localeCompare(b))),
      parameters: {
        ...Object.fromEntries(Object.values(HONOURED_HEADERS).map(({ component, definition }) => [component, definition])),
        ...sent.parameters,
      },
      headers: RESPONSE_HEADERS,
      requestBodies: sent.requestBodies,
      responses: sent.responses,
      securitySchemes: {
        entra: {
          type: 'oauth2',
          description:
            "Microsoft Entra ID, signing the user in. Replace `{clientId}` with the API's application id; " +
            'a single-tenant client may use its tenant id in place of `organizations`.',
          flows: {
            authorizationCode: {
              authorizationUrl: `${AUTHORITY}/authorize`,
              tokenUrl: `${AUTHORITY}/token`,
              scopes: { [USER_SCOPE]: 'Call the API as the signed-in user' },
            },
          },
        },
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'An access token obtained any other way: an app-only token (authorised by its roles), a Teams or Office ' +
            'single-sign-on token, or `npm run -s token` locally.',
        },
      },
    },
  };
}
