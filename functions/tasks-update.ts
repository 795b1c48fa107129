import { app } from '@azure/functions';
import { updateTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { task, taskIdParameter, updateTaskBody } from '../shared/schemas/tasks.js';

export const tasksUpdate = endpoint({
  permission: 'tasks:write',
  params: { taskId: taskIdParameter },
  body: updateTaskBody,
  honours: ['If-Match'],
  success: { status: 200, body: task },
  docs: {
    summary: 'Update a task',
    description:
      'Changes the fields given and keeps the others; a task cannot move to another project. A PUT of what is stored (once normalised as it ' +
      "would be stored) changes nothing: the same `updatedAt` and ETag, and no `task.updated` event. An Archived project's tasks are read-only, " +
      '409 even for a PUT that would change nothing.',
    errors: { 409: ['projectArchived'] },
  },
  async handle({ principal, params, body, ifMatch }) {
    return { body: await updateTask(principal.tenantId, params.taskId, body, ifMatch) };
  },
});

app.http('tasks-update', { methods: ['PUT'], route: apiRoute('tasks/{taskId}'), authLevel: 'anonymous', handler: tasksUpdate });
