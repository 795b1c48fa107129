import { app } from '@azure/functions';
import { getCurrentUser } from '../shared/data/users-repository.js';
import { ApiError } from '../shared/errors.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { user } from '../shared/schemas/users.js';

export const usersMe = endpoint({
  permission: 'users:read',
  honours: ['If-None-Match'],
  success: { status: 200, body: user },
  docs: {
    summary: 'Read the caller',
    description: 'The user the token belongs to, as recorded by this request.',
    errors: { 403: ['usersOnly'], 404: ['userNotFound'] },
  },
  async handle({ principal }) {
    if (principal.kind !== 'user') throw new ApiError(403, 'usersOnly');
    return { body: await getCurrentUser(principal.tenantId, principal.objectId) };
  },
});

app.http('users-me', { methods: ['GET'], route: apiRoute('users/me'), authLevel: 'anonymous', handler: usersMe });
