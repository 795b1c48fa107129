/**
 * The floor's work (bench/floor-work.ts) as a function app of its own, which the bench has a second
 * local host serve: the same work behind the Functions layer (the host's routing, the invocation
 * objects Azure's worker builds, the answer), so that the API's gap to the floor splits into what
 * that layer costs and what the app's own code costs.
 */
import { app, type HttpHandler } from '@azure/functions';
import { floorWork } from './floor-work.js';

const serveFloorWork: HttpHandler = async (request) => {
  const { status, document } = await floorWork({
    method: request.method,
    url: new URL(request.url),
    authorization: request.headers.get('authorization') ?? undefined,
    text: () => request.text(),
  });
  // As the app answers: a JSON body, written by the host.
  return { status, jsonBody: document, headers: { 'content-type': 'application/json; charset=utf-8' } };
};

app.http('floor-project', { methods: ['GET'], route: 'projects/{projectId}', authLevel: 'anonymous', handler: serveFloorWork });
app.http('floor-projects', { methods: ['GET', 'POST'], route: 'projects', authLevel: 'anonymous', handler: serveFloorWork });
app.http('floor-tasks', { methods: ['GET'], route: 'tasks', authLevel: 'anonymous', handler: serveFloorWork });
