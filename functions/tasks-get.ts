import { app } from '@azure/functions';
import { getTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { task, taskIdParameter } from '../shared/schemas/tasks.js';

export const tasksGet = endpoint({
  permission: 'tasks:read',
  params: { taskId: taskIdParameter },
  honours: ['If-None-Match'],
  success: { status: 200, body: task },
  docs: { summary: 'Read a task' },
  async handle({ principal, params }) {
    return { body: await getTask(principal.tenantId, params.taskId) };
  },
});

app.http('tasks-get', { methods: ['GET'], route: apiRoute('tasks/{taskId}'), authLevel: 'anonymous', handler: tasksGet });
