import { app } from '@azure/functions';
import { ApiError } from '../shared/errors.js';
import { respond } from '../shared/http/endpoint.js';
import type { HttpHandler } from '@azure/functions';

/**
 * Anything no other function matches (an unknown path, or a method a path does not have) gets the
 * contract's 404 body instead of the host's empty one. Routing prefers every literal or parameter
 * route over this catch-all.
 */
export const routesFallback: HttpHandler = (request, context) =>
  respond(request, context, () =>
    Promise.reject(new ApiError(404, 'routeNotFound', { method: request.method, path: new URL(request.url).pathname.slice(0, 200) })),
  );

app.http('routes-fallback', {
  methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'],
  route: '{*path}',
  authLevel: 'anonymous',
  handler: routesFallback,
});
