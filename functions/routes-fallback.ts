import { app } from '@azure/functions';
import { respond } from '../shared/http/endpoint.js';
import { unmatchedRoute } from '../shared/http/routes.js';
import type { HttpHandler } from '@azure/functions';

/**
 * Anything no other function matches, on any path (host.json's routePrefix is empty): a method a path of
 * the API does not take is a 405 with `Allow`, a path outside `/api` a 404 saying where the API is, any
 * other an unknown route's 404, each in the contract's shape instead of the host's empty 404. Routing
 * prefers every literal or parameter route over this catch-all.
 */
export const routesFallback: HttpHandler = (request, context) =>
  respond(request, context, async () => {
    throw await unmatchedRoute(request.method, new URL(request.url));
  });

app.http('routes-fallback', {
  methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'],
  route: '{*path}',
  authLevel: 'anonymous',
  handler: routesFallback,
});
