import { app } from '@azure/functions';
import { getCurrentUser } from '../shared/data/users-repository.js';
import { ApiError } from '../shared/errors.js';
import { endpoint } from '../shared/http/endpoint.js';
import { resource } from '../shared/http/responses.js';
import { user } from '../shared/schemas/users.js';

export const usersMe = endpoint({
  permission: 'users:read',
  docs: {
    summary: 'Read the caller',
    description: 'The user the token belongs to, as recorded by this request.',
    success: { status: 200, body: user, headers: ['ETag'] },
    errors: { 403: ['usersOnly'], 404: ['userNotFound'] },
  },
  async handle({ principal }) {
    if (principal.kind !== 'user') throw new ApiError(403, 'usersOnly');
    return resource(200, await getCurrentUser(principal));
  },
});

app.http('users-me', { methods: ['GET'], route: 'users/me', authLevel: 'anonymous', handler: usersMe });
