import { app } from '@azure/functions';
import { listTasks } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { listTasksQuery, taskListItem } from '../shared/schemas/tasks.js';

export const tasksList = endpoint({
  permission: 'tasks:read',
  query: listTasksQuery,
  success: { status: 200, page: taskListItem },
  docs: {
    summary: 'List tasks',
    description:
      '`dueBefore` finds the tasks due strictly before a date (a task without a due date is never due). By `dueDate`, tasks without one ' +
      'come first (last with `-dueDate`); by `priority`, Low < Medium < High < Urgent.',
  },
  async handle({ principal, query }) {
    return { page: await listTasks(principal.tenantId, query) };
  },
});

app.http('tasks-list', { methods: ['GET'], route: apiRoute('tasks'), authLevel: 'anonymous', handler: tasksList });
