import { app } from '@azure/functions';
import { listTasks } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { json, nextPageLink } from '../shared/http/responses.js';
import { listTasksQuery } from '../shared/schemas/tasks.js';

export const tasksList = endpoint({
  permission: 'tasks:read',
  query: listTasksQuery,
  async handle({ principal, query, request }) {
    const page = await listTasks(principal, query);
    return json(200, page.items, nextPageLink(request.url, page.nextCursor));
  },
});

app.http('tasks-list', { methods: ['GET'], route: 'tasks', authLevel: 'anonymous', handler: tasksList });
