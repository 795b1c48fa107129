import { app } from '@azure/functions';
import { listRecordedUsers } from '../shared/data/users-repository.js';
import { listDirectoryUsers } from '../shared/graph/directory-users.js';
import { endpoint } from '../shared/http/endpoint.js';
import { json, nextPageLink } from '../shared/http/responses.js';
import { listUsersQuery } from '../shared/schemas/users.js';

export const usersList = endpoint({
  permission: 'users:read',
  query: listUsersQuery,
  async handle({ principal, query, request }) {
    const page = query.source === 'directory' ? await listDirectoryUsers(principal, query) : await listRecordedUsers(principal, query);
    return json(200, page.items, nextPageLink(request.url, page.nextCursor));
  },
});

app.http('users-list', { methods: ['GET'], route: 'users', authLevel: 'anonymous', handler: usersList });
