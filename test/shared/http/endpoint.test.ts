/**
 * endpoint(), the HTTP edge, called as the Functions worker calls a handler: with an HttpRequest and
 * an InvocationContext built by @azure/functions' own constructors. Tokens come from an identity
 * provider of this file's own, so the real jose path runs; app-only tokens record no caller, so no
 * database is needed and each case takes milliseconds.
 */
import functions, { type HttpResponseInit } from '@azure/functions';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { startIdentityProvider, type IdentityProvider } from '../../../local/identity/provider.js';
import { badRequest } from '../../../shared/errors.js';
import { listedWithETag } from '../../../shared/schemas/common.js';
import type { EndpointInput, Outcome } from '../../../shared/http/endpoint.js';
import { entityTag } from '../../../shared/http/etag.js';
import type { OperationDefinition } from '../../../shared/http/operation-definition.js';
import type { PathParameter } from '../../../shared/schemas/common.js';
import { LOCAL_CLIENT_ID as CLIENT_ID, LOCAL_HOME_TENANT_ID as HOME_TENANT } from '../../../local/defaults.js';

const { HttpRequest, HttpResponse, InvocationContext } = functions;

/** The answer as the Functions worker sends it (it makes an HttpResponse of what a handler returns): a header set to undefined goes out as "undefined". */
const sent = (answer: HttpResponseInit) => new HttpResponse(answer);

let identityProvider: IdentityProvider;
let endpointModule: typeof import('../../../shared/http/endpoint.js');

beforeAll(async () => {
  identityProvider = await startIdentityProvider({ tenants: [HOME_TENANT], clientId: CLIENT_ID, tls: inject('trustedTls') });
  // Read when the first request arrives: the app's settings, pointing at this file's identity provider.
  Object.assign(process.env, { AUTH_TENANT_ID: HOME_TENANT, AUTH_CLIENT_ID: CLIENT_ID, AUTH_AUTHORITY_HOST: identityProvider.authorityHost });
  endpointModule = await import('../../../shared/http/endpoint.js');
});
afterAll(() => identityProvider.close());

/** The CORS-safelisted response headers, which a page reads without their being exposed, and nosniff, which is for the browser alone. */
const BROWSER_READS_ANYWAY = new Set([
  'Cache-Control',
  'Content-Language',
  'Content-Length',
  'Content-Type',
  'Expires',
  'Last-Modified',
  'Pragma',
  'X-Content-Type-Options',
]);

const itemId: PathParameter = { schema: z.string().regex(/^ITM-\d+$/), notFound: 'projectNotFound', example: 'ITM-1' };
const item = z.object({ id: z.string(), name: z.string() });

/** An endpoint that hands back what it was given, so each case can see what reached the handler. */
function echo(definition: Partial<Parameters<typeof endpointModule.endpoint>[0]>, outcome: (input: EndpointInput<unknown, unknown, unknown>) => Outcome) {
  const received: EndpointInput<unknown, unknown, unknown>[] = [];
  const handler = endpointModule.endpoint({
    permission: 'projects:write',
    success: { status: 200, body: item },
    docs: { summary: 'Echo' },
    ...definition,
    handle(input) {
      received.push(input);
      return Promise.resolve(outcome(input));
    },
  });
  return { handler, received };
}

async function call(
  handler: ReturnType<typeof echo>['handler'],
  init: {
    method?: string;
    path?: string;
    /** The whole URL the host passes, when a test needs another host or a path not under /api. */
    url?: string;
    /** The query record as Azure's host passes it; without one the library reads the URL's query string. */
    query?: Record<string, string>;
    headers?: Record<string, string>;
    params?: Record<string, string>;
    body?: string;
    roles?: string[];
  } = {},
): Promise<HttpResponseInit & { headers: Record<string, string> }> {
  const token = await identityProvider.issueToken({ tenantId: HOME_TENANT, kind: 'app', roles: init.roles ?? ['LMS.Admin'] });
  const request = new HttpRequest({
    method: init.method ?? 'GET',
    url: init.url ?? `http://localhost/api${init.path ?? '/items'}`,
    headers: { authorization: `Bearer ${token}`, ...(init.body ? { 'content-type': 'application/json' } : {}), ...init.headers },
    params: init.params ?? {},
    ...(init.query ? { query: init.query } : {}),
    ...(init.body ? { body: { string: init.body } } : {}),
  });
  const context = new InvocationContext({ invocationId: 'request-1', functionName: 'items-echo', logHandler: () => undefined });
  return (await handler(request, context)) as HttpResponseInit & { headers: Record<string, string> };
}

describe('endpoint()', () => {
  it('authenticates before anything else: no token is a 401 in the contract shape, whatever else is wrong', async () => {
    const { handler, received } = echo({ params: { itemId } }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    const request = new HttpRequest({ method: 'GET', url: 'http://localhost/api/items/nope?colour=red', params: { itemId: 'nope' } });
    const answer = (await handler(request, new InvocationContext({ invocationId: 'request-2' }))) as HttpResponseInit & { headers: Record<string, string> };
    expect(answer.status).toBe(401);
    expect(answer.headers['WWW-Authenticate']).toBe('Bearer error="invalid_token"');
    expect(answer.jsonBody).toMatchObject({ error: 'Unauthorized', status: 401, requestId: 'request-2' });
    expect(received).toEqual([]);
  });

  it('checks the role: 403 without the permission', async () => {
    const { handler, received } = echo({}, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    expect((await call(handler, { roles: ['LMS.Reader'] })).status).toBe(403);
    expect(received).toEqual([]);
  });

  it('answers a malformed path parameter with its resource 404, without calling the handler', async () => {
    const { handler, received } = echo({ params: { itemId } }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    const answer = await call(handler, { path: '/items/..%2Fx', params: { itemId: '../x' } });
    expect(answer.status).toBe(404);
    expect(answer.jsonBody).toMatchObject({ error: 'Not Found', message: 'Project ../x does not exist.' });
    expect(received).toEqual([]);
    await call(handler, { path: '/items/ITM-7', params: { itemId: 'ITM-7' } });
    expect(received[0]!.params).toEqual({ itemId: 'ITM-7' });
  });

  it("answers a path parameter the route left out (an optional {itemId?}) with the resource's 404, naming no id it was not sent", async () => {
    const { handler, received } = echo({ params: { itemId } }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    const answer = await call(handler, { path: '/items/' });
    expect(answer.status).toBe(404);
    expect(answer.jsonBody).toMatchObject({ error: 'Not Found', message: 'Project  does not exist.' });
    expect(received).toEqual([]);
  });

  it("bounds what a path parameter's 404 repeats of the request: the id's first 100 characters, the path's first 200", async () => {
    const long = 'x'.repeat(5000);
    const project = echo({ params: { itemId } }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    const byId = await call(project.handler, { path: `/items/${long}`, params: { itemId: long } });
    expect(byId.jsonBody).toMatchObject({ status: 404, message: `Project ${'x'.repeat(100)} does not exist.` });
    const file: PathParameter = { ...itemId, notFound: 'routeNotFound' };
    const route = echo({ params: { file } }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    const byPath = await call(route.handler, { path: `/items/${long}`, params: { file: long } });
    expect(byPath.jsonBody).toMatchObject({ status: 404, message: `No operation matches GET ${`/api/items/${long}`.slice(0, 200)}.` });
  });

  it('refuses unknown and repeated query parameters, and hands the handler the parsed query', async () => {
    const query = z.strictObject({ limit: z.string().transform(Number).optional() });
    const { handler, received } = echo({ query }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    const unknown = await call(handler, { path: '/items?stauts=Active' });
    expect(unknown.status).toBe(400);
    expect((unknown.jsonBody as { details: { path: string }[] }).details.map((detail) => detail.path)).toEqual(['query.stauts']);
    expect((await call(handler, { path: '/items?limit=1&limit=2' })).status).toBe(400);
    await call(handler, { path: '/items?limit=5' });
    expect(received.map((input) => input.query)).toEqual([{ limit: 5 }]);
  });

  describe("with the query as Azure's host passes it: a repeated parameter's values joined by ',', names merged without case", () => {
    const query = z.strictObject({ status: z.enum(['Active', 'OnHold']).optional(), q: z.string().optional(), limit: z.string().regex(/^\d+$/).optional() });
    const details = (answer: HttpResponseInit) => (answer.jsonBody as { details: { path: string; message: string }[] }).details;

    it('refuses a repeated parameter, seen in the raw query string that the URL keeps, never reading the joined value', async () => {
      const { handler, received } = echo({ query }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
      for (const [path, joined, name] of [
        ['/items?q=a&q=b', { q: 'a,b' }, 'q'],
        ['/items?status=Active&STATUS=OnHold', { status: 'Active,OnHold' }, 'STATUS'],
        ['/items?q=&q=x', { q: 'x' }, 'q'],
        ['/items?limit=&limit=', { limit: '' }, 'limit'],
      ] as const) {
        const answer = await call(handler, { path, query: joined });
        expect(answer.status, path).toBe(400);
        expect(answer.jsonBody, path).toMatchObject({ message: `The query parameter "${name}" may appear only once.` });
      }
      const japanese = await call(handler, { path: '/items?q=a&q=b', query: { q: 'a,b' }, headers: { 'accept-language': 'ja' } });
      expect(japanese.jsonBody).toMatchObject({ message: 'クエリパラメーター「q」は 1 回だけ指定できます。' });
      // A name of any length is repeated back only in part.
      const long = 'n'.repeat(5000);
      expect((await call(handler, { path: `/items?${long}=1&${long}=2` })).jsonBody).toMatchObject({
        status: 400,
        message: `The query parameter "${'n'.repeat(100)}" may appear only once.`,
      });
      expect(received).toEqual([]);
    });

    it('says that a single-valued parameter takes one value when its value is a comma list; in q a comma is text', async () => {
      const { handler, received } = echo({ query }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
      const list = await call(handler, { path: '/items?status=Active%2COnHold&limit=1,2', query: { status: 'Active,OnHold', limit: '1,2' } });
      expect(list.status).toBe(400);
      expect(details(list)).toEqual([
        { path: 'query.status', message: '"status" takes one value: a list separated by commas is not accepted.' },
        { path: 'query.limit', message: '"limit" takes one value: a list separated by commas is not accepted.' },
      ]);
      const japanese = await call(handler, { path: '/items?status=Active,OnHold', query: { status: 'Active,OnHold' }, headers: { 'accept-language': 'ja' } });
      expect(details(japanese)).toEqual([{ path: 'query.status', message: '「status」には値を 1 つだけ指定できます。カンマ区切りのリストは指定できません。' }]);
      // An unknown parameter stays unknown, comma or not.
      expect(details(await call(handler, { path: '/items?colour=red,blue', query: { colour: 'red,blue' } }))).toEqual([
        { path: 'query.colour', message: 'Unknown field "colour".' },
      ]);
      await call(handler, { path: '/items?q=a,b', query: { q: 'a,b' } });
      expect(received.map((input) => input.query)).toEqual([{ q: 'a,b' }]);
    });

    it('says what is wrong with a refused value that holds no comma, or a q whose comma is text, as for any other value', async () => {
      const bounded = z.strictObject({ status: z.enum(['Active', 'OnHold']), q: z.string().max(5).optional() });
      const { handler, received } = echo({ query: bounded }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
      const [paused] = details(await call(handler, { path: '/items?status=Paused' }));
      expect(paused).toMatchObject({ path: 'query.status', message: expect.stringContaining('"Active"') });
      // A required parameter left out is named as missing, not taken for a list.
      const [missing] = details(await call(handler, { path: '/items' }));
      expect(missing).toMatchObject({ path: 'query.status' });
      expect(missing!.message).not.toContain('one value');
      // In q a comma is a character: a q too long is too long, comma or not.
      const withComma = details(await call(handler, { path: '/items?status=Active&q=ab,cdef', query: { status: 'Active', q: 'ab,cdef' } }));
      const withoutComma = details(await call(handler, { path: '/items?status=Active&q=abxcdef' }));
      expect(withComma).toEqual(withoutComma);
      expect(withComma[0]!.message).not.toContain('one value');
      expect(received).toEqual([]);
    });
  });

  it("answers a query schema's own refusal as it is: a value it decodes and refuses is not rewritten as a validation failure", async () => {
    const decoded = z.strictObject({
      cursor: z.string().transform(() => {
        throw badRequest('invalidCursor');
      }),
    });
    const { handler, received } = echo({ query: decoded }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    const answer = await call(handler, { path: '/items?cursor=a,b' });
    expect(answer.status).toBe(400);
    expect(answer.jsonBody).toMatchObject({ error: 'Bad Request', message: 'The cursor is not valid. Start again from the first page.' });
    expect(received).toEqual([]);
  });

  describe("with a body sent chunked, which Azure's host hands to the function empty", () => {
    const body = z.strictObject({ name: z.string() });
    const chunkedRequest = async (stream?: ReadableStream<Uint8Array>, language = 'en') =>
      new HttpRequest({
        nativeRequest: new Request('http://localhost/api/items', {
          method: 'POST',
          headers: {
            authorization: `Bearer ${await identityProvider.issueToken({ tenantId: HOME_TENANT, kind: 'app', roles: ['LMS.Admin'] })}`,
            'content-type': 'application/json',
            'transfer-encoding': 'chunked',
            'accept-language': language,
          },
          ...(stream ? { body: stream, duplex: 'half' } : {}),
        }),
        params: {},
      } as never);
    const context = () => new InvocationContext({ invocationId: 'request-3', functionName: 'items-echo', logHandler: () => undefined });

    it('answers 411 telling the client to send Content-Length, not that its JSON is invalid', async () => {
      const { handler, received } = echo({ body }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
      const answer = (await handler(await chunkedRequest(), context())) as HttpResponseInit;
      expect(answer.status).toBe(411);
      expect(answer.jsonBody).toMatchObject({ error: 'Length Required', status: 411, message: expect.stringContaining('Send it with Content-Length') });
      const japanese = (await handler(await chunkedRequest(undefined, 'ja'), context())) as HttpResponseInit;
      expect(japanese.jsonBody).toMatchObject({ status: 411, message: expect.stringContaining('Content-Length を付けて送信してください') });
      expect(received).toEqual([]);
    });

    it('answers 411 to an operation whose body may be left out too: a chunked body is not no body', async () => {
      const optional = z.strictObject({ mode: z.enum(['quick', 'full']).default('quick') });
      const { handler, received } = echo({ body: optional }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
      expect(((await handler(await chunkedRequest(), context())) as HttpResponseInit).status).toBe(411);
      expect(received).toEqual([]);
    });

    it('reads a chunked body that does arrive, and refuses it with 413 as soon as it passes 1 MiB', async () => {
      const { handler, received } = echo({ body }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
      const arriving = new Blob(['{"name":"Ada"}']).stream();
      expect(((await handler(await chunkedRequest(arriving), context())) as HttpResponseInit).status).toBe(200);
      expect(received.map((input) => input.body)).toEqual([{ name: 'Ada' }]);
      let chunksPulled = 0;
      const endless = new ReadableStream<Uint8Array>({
        pull(controller) {
          chunksPulled++;
          controller.enqueue(new Uint8Array(64 * 1024).fill(0x61));
        },
      });
      expect(((await handler(await chunkedRequest(endless), context())) as HttpResponseInit).status).toBe(413);
      expect(chunksPulled, 'stopped just past 1 MiB').toBeLessThan(20);
    });
  });

  it('validates the body against its schema and hands over the parsed value', async () => {
    const body = z.strictObject({ name: z.string().trim() });
    const { handler, received } = echo({ body }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    expect((await call(handler, { method: 'POST', body: '{"name":1}' })).status).toBe(400);
    expect((await call(handler, { method: 'POST', body: '{"name":' })).status).toBe(400);
    await call(handler, { method: 'POST', body: '{"name":"  Ada  "}' });
    expect(received.map((input) => input.body)).toEqual([{ name: 'Ada' }]);
  });

  describe('a body whose every field is optional may be left out: no body means every default', () => {
    const optional = z.strictObject({ mode: z.enum(['quick', 'full']).default('quick'), ids: z.array(z.string()).optional() });
    const echoed = () => echo({ body: optional }, () => ({ body: { id: 'ITM-1', name: 'x' } }));

    it('reads a request without content as {}, whatever its Content-Type says', async () => {
      const { handler, received } = echoed();
      // As `curl -X POST` sends it: no Content-Type, no Content-Length.
      expect((await call(handler, { method: 'POST' })).status).toBe(200);
      // As fetch() sends a POST without a body, and with a type that names nothing sent.
      expect((await call(handler, { method: 'POST', headers: { 'content-length': '0' } })).status).toBe(200);
      expect((await call(handler, { method: 'POST', headers: { 'content-length': '0', 'content-type': 'text/plain' } })).status).toBe(200);
      expect(received.map((input) => input.body)).toEqual([{ mode: 'quick' }, { mode: 'quick' }, { mode: 'quick' }]);
    });

    it('reads a body that is sent as always: JSON, or 400, or 415', async () => {
      const { handler, received } = echoed();
      expect((await call(handler, { method: 'POST', body: '{"mode":"full"}' })).status).toBe(200);
      expect(received.map((input) => input.body)).toEqual([{ mode: 'full' }]);
      expect((await call(handler, { method: 'POST', body: ' ' })).jsonBody).toMatchObject({ status: 400 });
      expect((await call(handler, { method: 'POST', body: '{"mode":"full"}', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
      const declared = { 'content-type': 'text/plain', 'content-length': '15' };
      expect((await call(handler, { method: 'POST', body: '{"mode":"full"}', headers: declared })).status).toBe(415);
      expect((await call(handler, { method: 'POST', body: '{"mode":"sideways"}' })).status).toBe(400);
      expect(received).toHaveLength(1);
    });

    it('keeps a body with a required field required: none is a 415 as before, an empty JSON one a 400', async () => {
      const { handler, received } = echo({ body: z.strictObject({ name: z.string() }) }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
      expect((await call(handler, { method: 'POST' })).status).toBe(415);
      expect((await call(handler, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '0' } })).jsonBody).toMatchObject({
        status: 400,
        message: expect.stringContaining('JSON'),
      });
      expect(received).toEqual([]);
    });
  });

  describe('an operation declared without a body takes none: one sent all the same is read as any body, and must be {}', () => {
    const bodiless = () => echo({}, () => ({ body: { id: 'ITM-1', name: 'x' } }));

    it('answers a request without content: no body at all, or Content-Length 0 whatever its type; and {}', async () => {
      const { handler, received } = bodiless();
      expect((await call(handler, { method: 'POST' })).status).toBe(200);
      expect((await call(handler, { method: 'POST', headers: { 'content-length': '0' } })).status).toBe(200);
      expect((await call(handler, { method: 'DELETE', headers: { 'content-length': '0', 'content-type': 'text/plain' } })).status).toBe(200);
      expect((await call(handler, { method: 'POST', body: '{}' })).status).toBe(200);
      expect(received.map((input) => input.body)).toEqual([undefined, undefined, undefined, undefined]);
    });

    it('refuses every field of a body as unknown, listing each in details, in the language asked for', async () => {
      const { handler, received } = bodiless();
      const refused = await call(handler, { method: 'POST', body: '{"secret":"whsec_mine","also":1}' });
      expect(refused.status).toBe(400);
      expect(refused.jsonBody).toMatchObject({
        error: 'Bad Request',
        details: [
          { path: 'secret', message: 'Unknown field "secret".' },
          { path: 'also', message: 'Unknown field "also".' },
        ],
      });
      const japanese = await call(handler, { method: 'DELETE', body: '{"secret":"whsec_mine"}', headers: { 'accept-language': 'ja' } });
      expect(japanese.jsonBody).toMatchObject({ status: 400, details: [{ path: 'secret', message: '不明なフィールド「secret」です。' }] });
      expect(received).toEqual([]);
    });

    it('reads a body by the rules of every body: another type 415, invalid JSON or no object 400', async () => {
      const { handler, received } = bodiless();
      expect((await call(handler, { method: 'POST', body: 'whsec_mine', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
      const declared = { 'content-type': 'text/plain', 'content-length': '10' };
      expect((await call(handler, { method: 'POST', body: 'whsec_mine', headers: declared })).status).toBe(415);
      expect((await call(handler, { method: 'POST', body: '{"secret":' })).jsonBody).toMatchObject({
        status: 400,
        message: 'The request body is not valid JSON.',
      });
      expect((await call(handler, { method: 'POST', body: '["whsec_mine"]' })).jsonBody).toMatchObject({
        status: 400,
        message: 'The request body must be a JSON object.',
      });
      expect(received).toEqual([]);
    });
  });

  it('hands over If-Match as the versions expected only where the operation honours it', async () => {
    const honouring = echo({ honours: ['If-Match'] }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    await call(honouring.handler, { headers: { 'if-match': '"v1", W/"weak", "v2"' } });
    await call(honouring.handler, { headers: { 'if-match': '*' } });
    await call(honouring.handler);
    expect(honouring.received.map((input) => input.ifMatch)).toEqual([['v1', 'v2'], '*', undefined]);
    expect((await call(honouring.handler, { headers: { 'if-match': 'v1' } })).jsonBody).toMatchObject({ status: 400 });

    const ignoring = echo({}, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    await call(ignoring.handler, { headers: { 'if-match': 'not even a tag' } });
    expect(ignoring.received[0]!.ifMatch).toBeUndefined();
  });

  it('hands over the Idempotency-Key scoped to the function, and refuses a malformed one', async () => {
    const { handler, received } = echo({ honours: ['Idempotency-Key'] }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    await call(handler, { headers: { 'idempotency-key': 'key-1' } });
    expect(received[0]!.idempotency).toEqual({ key: 'key-1', scope: 'items-echo' });
    expect((await call(handler, { headers: { 'idempotency-key': 'has space' } })).status).toBe(400);
    // Without the header there is no key: each request is its own.
    await call(handler);
    expect(received[1]!.idempotency).toBeUndefined();
  });

  it("refuses a key with a comma: Azure's host joins a repeated Idempotency-Key with one, so two keys never pass as a third", async () => {
    const { handler, received } = echo({ honours: ['Idempotency-Key'] }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    for (const joined of ['key-1,key-1', 'key-1,key-2', 'key-1, key-2', ',key-1']) {
      const answer = await call(handler, { headers: { 'idempotency-key': joined } });
      expect(answer.status, joined).toBe(400);
      expect(answer.jsonBody, joined).toMatchObject({
        message: 'The Idempotency-Key header must be sent once, as 1 to 255 visible ASCII characters other than a comma.',
      });
    }
    expect(received).toEqual([]);
    await call(handler, { headers: { 'idempotency-key': 'order-7;retry=2' } });
    expect(received[0]!.idempotency).toEqual({ key: 'order-7;retry=2', scope: 'items-echo' });
  });

  it("sends every single resource's ETag, whatever the operation honours and whatever its status, and describes it so", async () => {
    const tag = async (handler: ReturnType<typeof echo>['handler'], method = 'GET') => (await call(handler, { method })).headers.ETag;
    const expected = entityTag({ id: 'ITM-1', name: 'x' });
    for (const honours of [[], ['If-Match'], ['If-None-Match'], ['Idempotency-Key']] as const) {
      const { handler } = echo({ honours: [...honours] }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
      expect(await tag(handler), honours.join() || 'none').toBe(expected);
      expect(handler.definition.success.headers, honours.join() || 'none').toEqual(['ETag']);
    }
    // An action's answer (202) and a create's (201) are single resources too; the tag comes beside the headers declared.
    for (const status of [201, 202] as const) {
      const { handler } = echo({ success: { status, body: item, headers: ['Location'] } }, () => ({ body: { id: 'ITM-1', name: 'x' }, location: '/api/x' }));
      expect(await tag(handler, 'POST'), String(status)).toBe(expected);
      expect(handler.definition.success.headers, String(status)).toEqual(['Location', 'ETag']);
    }
    // A delete that honours If-Match answers no body, so no tag.
    const deleted = echo({ honours: ['If-Match'], success: { status: 204 } }, () => ({}));
    expect((await call(deleted.handler, { method: 'DELETE' })).headers.ETag).toBeUndefined();
    expect(deleted.handler.definition.success.headers).toBeUndefined();
  });

  it('gives each item of a page whose items are listedWithETag its etag: the ETag a read of the item answers, in the body, and describes it so', async () => {
    const listed = listedWithETag(item);
    const items = [
      { id: 'ITM-1', name: 'x' },
      { id: 'ITM-2', name: 'y' },
    ];
    const list = echo({ success: { status: 200, page: listed } }, () => ({ page: { items, nextCursor: undefined } }));
    const page = await call(list.handler);
    const read = echo({ honours: ['If-None-Match'] }, () => ({ body: { id: 'ITM-2', name: 'y' } }));
    const readTag = (await call(read.handler)).headers.ETag;
    expect(page.jsonBody).toEqual([
      { id: 'ITM-1', name: 'x', etag: entityTag({ id: 'ITM-1', name: 'x' }) },
      { id: 'ITM-2', name: 'y', etag: readTag },
    ]);
    expect((list.handler.definition.success.body as z.ZodArray).element).toBe(listed);
    expect(listed.shape.etag).toBeDefined();
    // A page of items without a read of their own stays as the handler gave it.
    const plain = echo({ success: { status: 200, page: item } }, () => ({ page: { items, nextCursor: undefined } }));
    expect((await call(plain.handler)).jsonBody).toEqual(items);
  });

  it("tags a body that shows more than its resource (a secret shown once) with the resource's version, as a read of it tags it", async () => {
    const withSecret = item.extend({ secret: z.string() });
    const shown = { id: 'ITM-1', name: 'x', secret: 'whsec_new' };
    const rotated = echo({ success: { status: 200, body: withSecret, versionOf: item } }, () => ({ body: shown }));
    const answer = await call(rotated.handler, { method: 'POST' });
    expect(answer.jsonBody).toEqual(shown);
    const read = echo({ honours: ['If-None-Match'] }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    expect(answer.headers.ETag).toBe((await call(read.handler)).headers.ETag);
    // Whatever the secret: it is no part of the version.
    const another = echo({ success: { status: 201, body: withSecret, versionOf: item } }, () => ({
      created: { resource: { ...shown, secret: 'whsec_other' }, replayed: false },
    }));
    expect((await call(another.handler, { method: 'POST' })).headers.ETag).toBe(answer.headers.ETag);
  });

  it('answers 304 for If-None-Match where honoured', async () => {
    const { handler } = echo({ honours: ['If-None-Match'] }, () => ({ body: { id: 'ITM-1', name: 'x' } }));
    const first = await call(handler);
    expect(first.status).toBe(200);
    expect(first.jsonBody).toEqual({ id: 'ITM-1', name: 'x' });
    expect(first.headers.ETag).toMatch(/^"[\w-]{27}"$/);
    expect(first.headers['X-Request-Id']).toBe('request-1');
    expect(first.headers['Cache-Control']).toBe('no-store');
    const again = await call(handler, { headers: { 'if-none-match': first.headers.ETag! } });
    expect(again.status).toBe(304);
    expect(again.jsonBody).toBeUndefined();
    expect(again.headers['Content-Type']).toBeUndefined();
    // A 304 sends the ETag the 200 would have (RFC 9110, 15.4.5), and the headers every answer carries.
    expect(again.headers.ETag).toBe(first.headers.ETag);
    expect(again.headers['X-Request-Id']).toBe('request-1');
  });

  it('answers what a create made at its place under the collection, with its ETag, and Idempotent-Replayed when replayed', async () => {
    const resource = { id: 'ITM-9', name: 'x' };
    const create = (replayed: boolean) =>
      echo({ success: { status: 201, body: item, headers: ['Location'] } }, () => ({ created: { resource, replayed } })).handler;
    const created = await call(create(false), { method: 'POST', path: '//items' });
    expect(created.status).toBe(201);
    expect(created.jsonBody).toEqual(resource);
    expect(created.headers).toMatchObject({ Location: '/api/items/ITM-9', ETag: expect.stringMatching(/^"[\w-]{27}"$/) });
    expect(created.headers['Idempotent-Replayed']).toBeUndefined();
    const replayed = await call(create(true), { method: 'POST' });
    expect(replayed.headers).toMatchObject({ Location: '/api/items/ITM-9', ETag: created.headers.ETag, 'Idempotent-Replayed': 'true' });
    // A page of another origin may read each of them: every header meant for the caller that a browser does not show by itself.
    const forTheCaller = Object.keys(replayed.headers).filter((name) => !BROWSER_READS_ANYWAY.has(name) && !name.startsWith('Access-Control-'));
    expect(forTheCaller).toContain('Idempotent-Replayed');
    expect(replayed.headers['Access-Control-Expose-Headers']!.split(', ')).toEqual(expect.arrayContaining(forTheCaller));
  });

  it('sends a Location the handler gives, for what is made elsewhere than under the request path', async () => {
    const start = echo({ success: { status: 202, body: item, headers: ['Location'] } }, ({ path }) => ({
      body: { id: 'J-1', name: 'x' },
      location: `${path}/jobs/J-1`,
    }));
    expect((await call(start.handler, { method: 'POST' })).headers.Location).toBe('/api/items/jobs/J-1');
  });

  it('builds Location from the path without its empty segments: a trailing slash, as the host routes it, adds none', async () => {
    const resource = { id: 'ITM-9', name: 'x' };
    const create = echo({ success: { status: 201, body: item, headers: ['Location'] } }, () => ({ created: { resource, replayed: false } })).handler;
    const start = echo({ success: { status: 202, body: item, headers: ['Location'] } }, ({ path }) => ({ body: resource, location: `${path}/jobs/J-1` }));
    for (const path of ['/items/', '//items//', '/items']) {
      expect((await call(create, { method: 'POST', path })).headers.Location, path).toBe('/api/items/ITM-9');
      expect((await call(start.handler, { method: 'POST', path })).headers.Location, path).toBe('/api/items/jobs/J-1');
    }
  });

  it('sends Location and Retry-After only where the definition declares them, Retry-After with the seconds it declares', async () => {
    const job = { id: 'J-1', name: 'x' };
    const started = echo({ success: { status: 202, body: item, headers: ['Location'], retryAfterSeconds: 2 } }, ({ path }) => ({
      body: job,
      location: `${path}/J-1`,
    }));
    const answer = sent(await call(started.handler, { method: 'POST' }));
    expect(answer.status).toBe(202);
    expect(answer.headers.get('retry-after')).toBe('2');
    expect(answer.headers.get('location')).toBe('/api/items/J-1');
    // A handler's location without the definition declaring Location is not sent; nor is any Retry-After.
    for (const outcome of [{ body: job }, { body: job, location: '/api/items/J-1' }]) {
      const plain = sent(await call(echo({}, () => outcome).handler));
      expect([...plain.headers.keys()]).not.toContain('location');
      expect([...plain.headers.keys()]).not.toContain('retry-after');
    }
  });

  it('answers a page as the array of its items, with Link to the next page, and describes it so', async () => {
    const items = [{ id: 'ITM-1', name: 'x' }];
    const list = echo({ success: { status: 200, page: item } }, () => ({ page: { items, nextCursor: 'next-page' } }));
    const page = await call(list.handler);
    expect(page.jsonBody).toEqual(items);
    expect(page.headers.Link).toBe('</api/items?cursor=next-page>; rel="next"');
    const last = echo({ success: { status: 200, page: item } }, () => ({ page: { items: [], nextCursor: undefined } }));
    expect((await call(last.handler)).headers.Link).toBeUndefined();
    // The API description reads the definition the handler carries: an array of the items, with Link.
    const { success } = list.handler.definition;
    expect(success.headers).toEqual(['Link']);
    expect(success.body).toBeInstanceOf(z.ZodArray);
    expect((success.body as z.ZodArray).element).toBe(item);
  });

  it("builds Link from the request's path and query alone: never its host, never a path that starts with //", async () => {
    const list = echo(
      { success: { status: 200, page: item }, query: z.strictObject({ q: z.string(), limit: z.string(), cursor: z.string().optional() }) },
      () => ({
        page: { items: [], nextCursor: 'next-page' },
      }),
    );
    for (const url of ['http://evil.example/api/items?q=a%20b&limit=2&cursor=old', 'https://evil.example:8443//api//items/?q=a%20b&limit=2&cursor=old']) {
      const page = sent(await call(list.handler, { url }));
      expect(page.headers.get('link'), url).toBe('</api/items?q=a+b&limit=2&cursor=next-page>; rel="next"');
    }
  });

  it('sends a 204 without a body, and so without a Content-Type', async () => {
    const { handler } = echo({ success: { status: 204 } }, () => ({}));
    const answer = await call(handler, { method: 'DELETE' });
    expect(answer.status).toBe(204);
    expect(answer.jsonBody).toBeUndefined();
    expect(answer.headers['Content-Type']).toBeUndefined();
    expect(answer.headers['X-Request-Id']).toBe('request-1');
    // The definition decides the answer: a handler's body does not turn a 204 into one with content.
    const talkative = sent(await call(echo({ success: { status: 204 } }, () => ({ body: { id: 'ITM-1', name: 'x' } })).handler, { method: 'DELETE' }));
    expect(talkative.status).toBe(204);
    expect(talkative.headers.get('content-type')).toBeNull();
    expect(await talkative.text()).toBe('');
  });

  it('announces a deprecated operation with Deprecation, Sunset and a deprecation link beside the paging link', async () => {
    const { handler } = echo(
      {
        success: { status: 200, page: item },
        deprecated: { since: '2026-11-01T00:00:00Z', sunset: '2027-11-01T00:00:00Z', link: 'https://example.test/v2' },
      },
      () => ({ page: { items: [], nextCursor: 'c' } }),
    );
    const answer = await call(handler);
    expect(answer.headers.Deprecation).toBe(`@${Date.parse('2026-11-01T00:00:00Z') / 1000}`);
    expect(answer.headers.Sunset).toBe('Mon, 01 Nov 2027 00:00:00 GMT');
    expect(answer.headers.Link).toBe('</api/items?cursor=c>; rel="next", <https://example.test/v2>; rel="deprecation"');
  });

  it('sends no deprecation link where the deprecation names none: only the next page, or no Link at all', async () => {
    const deprecated = { since: '2026-11-01T00:00:00Z', sunset: '2027-11-01T00:00:00Z' };
    const list = echo({ success: { status: 200, page: item }, deprecated }, () => ({ page: { items: [], nextCursor: 'c' } }));
    const page = sent(await call(list.handler));
    expect(page.headers.get('link')).toBe('</api/items?cursor=c>; rel="next"');
    expect(page.headers.get('deprecation')).toBe(`@${Date.parse(deprecated.since) / 1000}`);
    const single = sent(await call(echo({ deprecated }, () => ({ body: { id: 'ITM-1', name: 'x' } })).handler));
    expect([...single.headers.keys()]).not.toContain('link');
    expect(single.headers.get('sunset')).toBe('Mon, 01 Nov 2027 00:00:00 GMT');
  });

  it('types every answer with content as JSON in UTF-8', async () => {
    const answer = sent(await call(echo({}, () => ({ body: { id: 'ITM-1', name: 'x' } })).handler));
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await answer.json()).toEqual({ id: 'ITM-1', name: 'x' });
  });

  it('turns whatever the handler throws into the contract body, in the language asked for', async () => {
    const { handler } = echo({}, () => {
      throw new Error('database exploded at /srv/app/shared/data.ts:12');
    });
    const answer = await call(handler, { headers: { 'accept-language': 'ja' } });
    expect(answer.status).toBe(500);
    expect(answer.jsonBody).toMatchObject({ error: 'Server Error', status: 500, requestId: 'request-1' });
    expect(JSON.stringify(answer.jsonBody)).not.toMatch(/exploded|srv|data\.ts/);
    expect(answer.headers['Content-Language']).toBe('ja');
  });
});

describe('publicOperation() and respond(), for what needs no token', () => {
  const context = () => new InvocationContext({ invocationId: 'request-4', functionName: 'page-get', logHandler: () => undefined });
  const request = () => new HttpRequest({ method: 'GET', url: 'http://localhost/api/page' });

  it('answers without a token, with the headers every answer carries, and carries its definition for the API description', async () => {
    const definition = { success: { status: 200, body: z.string(), mediaTypes: ['text/html'] }, docs: { summary: 'A page' } } satisfies OperationDefinition;
    const page = endpointModule.publicOperation(definition, (request, context) =>
      endpointModule.respond(request, context, () =>
        Promise.resolve({ status: 200, body: '<p>A page</p>', headers: { 'Content-Type': 'text/html; charset=utf-8' } }),
      ),
    );
    expect(page.definition).toBe(definition);
    const answer = sent(await page(request(), context()));
    expect(answer.status).toBe(200);
    // The type the handler gives wins over the JSON one.
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(answer.headers.get('x-request-id')).toBe('request-4');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(await answer.text()).toBe('<p>A page</p>');
  });

  it('types a body the handler sends whole as JSON unless it says otherwise: nosniff leaves no content untyped', async () => {
    const answer = sent(await endpointModule.respond(request(), context(), () => Promise.resolve({ status: 200, body: '{"title":"A page"}' })));
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await answer.json()).toEqual({ title: 'A page' });
  });
});
