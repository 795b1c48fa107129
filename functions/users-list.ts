import { app } from '@azure/functions';
import { listRecordedUsers } from '../shared/data/users-repository.js';
import { listDirectoryUsers } from '../shared/graph/directory-users.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { listUsersQuery, user } from '../shared/schemas/users.js';

export const usersList = endpoint({
  permission: 'users:read',
  query: listUsersQuery,
  success: { status: 200, page: user },
  docs: {
    summary: 'List users',
    description:
      'By display name. `source=recorded` (the default): the users of your tenant who have called the API. ' +
      "`source=directory`: your tenant's users from Microsoft Graph, read with your own permission through " +
      'On-Behalf-Of; they have no `roles`, `createdAt` or `lastSeenAt`, and `role` cannot filter them. When your ' +
      'organisation requires a new sign-in, the 401 carries the claims challenge in `WWW-Authenticate` and in the ' +
      "body's `claims`.",
    errors: {
      400: ['roleFilterNeedsRecordedUsers', 'directoryQueryRefused'],
      401: ['interactionRequired'],
      403: ['usersOnly', 'consentRequired', 'directoryAccessDenied'],
      502: ['directoryUnavailable', 'directoryFailed'],
      503: ['directoryUnavailable'],
    },
  },
  async handle({ principal, query }) {
    return { page: query.source === 'directory' ? await listDirectoryUsers(principal, query) : await listRecordedUsers(principal.tenantId, query) };
  },
});

app.http('users-list', { methods: ['GET'], route: apiRoute('users'), authLevel: 'anonymous', handler: usersList });
