import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import { startHostProcess } from '../../local/stack.js';
import { EVENT_TYPES } from '../../shared/schemas/events.js';
import { stack } from '../support/stack.js';
import { ApiDescription, schemaProblems } from './description.js';

const run = promisify(execFile);
const appRoot = fileURLToPath(new URL('../../', import.meta.url));

let description: ApiDescription;
beforeAll(async () => {
  description = await ApiDescription.served();
});

describe('the OpenAPI document', () => {
  it('is what the code describes: openapi.json is current', async () => {
    // Rejects, with the reason on stderr, when `npm run openapi` would write something else.
    await expect(run(process.execPath, ['dist/tools/write-openapi.js', '--check'], { cwd: appRoot })).resolves.toBeDefined();
  });

  it('passes the OpenAPI 3.1 validator', async () => {
    const validated = (await SwaggerParser.validate(structuredClone(description.document) as never)) as { openapi?: string };
    expect(validated.openapi).toBe('3.1.0');
  });

  it('lists every route the app registers, and only those', async () => {
    // A host of its own, without settings: it loads the app and reports its routes, and runs nothing.
    const host = await startHostProcess({ port: 0, environment: {} });
    try {
      const registered = host.routes
        .filter((route) => !route.template.includes('{*'))
        .flatMap((route) => route.methods.map((method) => `${method} /${route.template}`))
        .sort();
      const server = description.document.servers[0].url as string;
      const documented = description.operations.map((operation) => `${operation.method} ${server}${operation.path}`).sort();
      expect(documented).toEqual(registered);
    } finally {
      await host.stop();
    }
  });

  it('gives every operation a summary, its answers and the contract error shape', () => {
    for (const { method, path, operation } of description.operations) {
      const name = `${method} ${path}`;
      expect(operation.summary, name).toBeTruthy();
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        if (Number(status) < 400) continue;
        expect(response.content['application/json'].schema.required, `${name} ${status}`).toEqual(['error', 'message', 'status']);
      }
      if (operation.security?.length === 0) continue;
      expect(Object.keys(operation.responses), name).toEqual(expect.arrayContaining(['400', '401', '403', '500', '503']));
      expect(operation.responses['401'].headers['WWW-Authenticate'].required, name).toBe(true);
    }
  });

  it('marks a request body required unless its every field is optional, and the 202 of a rebuild with Retry-After', () => {
    const operationAt = (method: string, path: string) =>
      description.operations.find((operation) => operation.method === method && operation.path === path)!.operation;
    expect(operationAt('POST', '/rag/index').requestBody.required).toBe(false);
    expect(operationAt('POST', '/rag/index').responses['202'].headers['Retry-After']).toMatchObject({ required: true, schema: { pattern: '^\\d+$' } });
    for (const [method, path] of [
      ['POST', '/projects'],
      ['PUT', '/projects/{projectId}'],
      ['POST', '/tasks'],
      ['PUT', '/tasks/{taskId}'],
      ['POST', '/webhooks'],
      ['PUT', '/webhooks/{webhookId}'],
    ] as const) {
      expect(operationAt(method, path).requestBody.required, `${method} ${path}`).toBe(true);
    }
  });

  it('states that an update must change something: each PUT body has at least one property, as the API refuses {}', () => {
    for (const path of ['/projects/{projectId}', '/tasks/{taskId}', '/webhooks/{webhookId}']) {
      const { operation } = description.operations.find((documented) => documented.method === 'PUT' && documented.path === path)!;
      expect(operation.requestBody.content['application/json'].schema.minProperties, path).toBe(1);
    }
  });

  it('asks for the access_as_user scope, or a bearer token, except for its own two public paths', () => {
    const { security, components } = description.document;
    expect(security).toEqual([{ entra: ['api://{clientId}/access_as_user'] }, { bearer: [] }]);
    expect(Object.keys(components.securitySchemes.entra.flows.authorizationCode.scopes)).toEqual(['api://{clientId}/access_as_user']);
    const publicPaths = description.operations.filter((operation) => operation.operation.security?.length === 0).map((operation) => operation.path);
    expect(publicPaths.sort()).toEqual(['/docs', '/docs/{file}', '/openapi.json']);
  });

  it('describes what a receiver gets for every event under webhooks: the body of each, and the Standard Webhooks headers', () => {
    const webhooks = (description.resolved.webhooks ?? {}) as Record<string, { post: Record<string, any> }>;
    expect(Object.keys(webhooks).sort()).toEqual([...EVENT_TYPES].sort());
    for (const [type, { post }] of Object.entries(webhooks)) {
      expect(post.summary, type).toBeTruthy();
      expect(post.security, type).toEqual([]);
      const headers = (post.parameters as Record<string, any>[]).filter((parameter) => parameter.in === 'header' && parameter.required);
      expect(headers.map((parameter) => parameter.name).sort(), type).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
      // The body is { type, timestamp, data }, its type this one or its sibling's (created and updated share a body); test/api/webhooks.stack.test.ts
      // checks real deliveries against it.
      const { schema } = post.requestBody.content['application/json'];
      expect(schema.required, type).toEqual(['type', 'timestamp', 'data']);
      expect(schema.properties.type.enum, type).toContain(type);
      const kind = (name: string) => name.slice(0, name.lastIndexOf('.'));
      expect(schema.properties.type.enum.map(kind), type).toEqual(schema.properties.type.enum.map(() => kind(type)));
      expect(Object.keys(post.responses).sort(), type).toEqual(['2XX', '410']);
    }
  });

  it('has an example for every JSON body, and every example fits its schema', () => {
    for (const { method, path, operation } of description.operations) {
      const bodies = [
        ...(operation.requestBody ? [['request', operation.requestBody.content['application/json']]] : []),
        ...Object.entries(operation.responses as Record<string, any>).map(([status, response]) => [status, response.content?.['application/json']]),
      ].filter(([, media]) => media);
      for (const [which, media] of bodies) {
        const name = `${method} ${path} ${which}`;
        const examples = media.example !== undefined ? [media.example] : Object.values(media.examples ?? {}).map((example: any) => example.value);
        expect(examples.length, `${name} has no example`).toBeGreaterThan(0);
        for (const example of examples) expect(schemaProblems(media.schema, example), name).toEqual([]);
      }
    }
  });

  it('is served without a token, with the contract headers, an ETag and 304 for a current copy', async () => {
    const response = await fetch(`${stack.apiBaseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('x-request-id')).toBeTruthy();
    const etag = response.headers.get('etag')!;
    expect(description.problems('GET', '/openapi.json', { status: 200, headers: response.headers, body: await response.json() })).toEqual([]);
    const again = await fetch(response.url, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
  });

  it("serves the reference page with no-store, and only the page's own static files for browsers to keep a day, as api-conventions.md says", async () => {
    const page = await fetch(`${stack.apiBaseUrl}/docs`);
    expect(page.headers.get('cache-control')).toBe('no-store');
    const file = await fetch(`${stack.apiBaseUrl}/docs/swagger-ui.css`);
    expect(file.status).toBe(200);
    expect(file.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(file.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
