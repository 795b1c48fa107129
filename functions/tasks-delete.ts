import { app } from '@azure/functions';
import { deleteTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { taskIdParameter } from '../shared/schemas/tasks.js';

export const tasksDelete = endpoint({
  permission: 'tasks:delete',
  params: { taskId: taskIdParameter },
  honours: ['If-Match'],
  success: { status: 204 },
  docs: { summary: 'Delete a task', errors: { 409: ['projectArchived'] } },
  async handle({ principal, params, ifMatch }) {
    await deleteTask(principal.tenantId, params.taskId, ifMatch);
    return {};
  },
});

app.http('tasks-delete', { methods: ['DELETE'], route: apiRoute('tasks/{taskId}'), authLevel: 'anonymous', handler: tasksDelete });
