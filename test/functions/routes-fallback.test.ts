/**
 * The catch-all, as the worker calls it: whatever no other function's route takes, with the operations
 * of the document the app carries (openapi.json, written from the registrations) telling a method a path
 * does not take (405) from a path the API does not have (404), and a path outside the API from both.
 */
import functions, { type HttpResponseInit } from '@azure/functions';
import { describe, expect, it } from 'vitest';
import { routesFallback } from '../../functions/routes-fallback.js';

const { HttpRequest, InvocationContext } = functions;

async function call(
  method: string,
  path: string,
  language = 'en',
): Promise<HttpResponseInit & { headers: Record<string, string>; jsonBody: { message: string } }> {
  const request = new HttpRequest({ method, url: `http://localhost${path}`, headers: { 'accept-language': language } });
  return (await routesFallback(request, new InvocationContext({ invocationId: 'fallback-1' }))) as never;
}

describe('the routes fallback', () => {
  it.each([
    ['PATCH', '/api/projects/PRJ-1001', 'GET, PUT, DELETE'],
    ['POST', '/api/projects/anything', 'GET, PUT, DELETE'],
    ['DELETE', '/api/projects', 'GET, POST'],
    ['HEAD', '/api/events', 'GET'],
    ['OPTIONS', '/api/webhooks/WHK-1/ping', 'POST'],
    ['PUT', '/API/Rag/Index/', 'POST'],
    ['POST', '/api//docs/start.js', 'GET'],
  ])('answers %s %s, a path the API has, with a 405 whose Allow lists its methods', async (method, path, allowed) => {
    const answer = await call(method, path);
    expect(answer.status).toBe(405);
    expect(answer.headers.Allow).toBe(allowed);
    expect(answer.jsonBody).toEqual({
      error: 'Method Not Allowed',
      status: 405,
      message: `${path} does not take ${method}: it takes ${allowed}.`,
      requestId: 'fallback-1',
    });
  });

  it('says so in Japanese too', async () => {
    expect((await call('PATCH', '/api/projects/PRJ-1001', 'ja')).jsonBody.message).toBe(
      '/api/projects/PRJ-1001 は PATCH を受け付けません。受け付けるメソッド: GET, PUT, DELETE。',
    );
  });

  it.each(['/api/nothing', '/api', '/api/', '/api/projects/PRJ-1001/tasks', '/api/users/me/roles'])(
    'answers GET %s, no path of the API, with its 404',
    async (path) => {
      const answer = await call('GET', path);
      expect(answer.status).toBe(404);
      expect(answer.headers.Allow).toBeUndefined();
      expect(answer.jsonBody.message).toBe(`No operation matches GET ${path}.`);
    },
  );

  it.each(['/projects', '/', '/apiary/projects', '/v1/api/projects'])('answers GET %s, outside /api, with a 404 saying where the API is', async (path) => {
    const answer = await call('GET', path);
    expect(answer.status).toBe(404);
    expect(answer.jsonBody.message).toBe(
      `No operation matches GET ${path}: the API's paths begin with /api, as in /api/projects, and its reference page is /api/docs.`,
    );
  });
});
