import { app } from '@azure/functions';
import { createTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { createTaskBody, task } from '../shared/schemas/tasks.js';

export const tasksCreate = endpoint({
  permission: 'tasks:write',
  body: createTaskBody,
  honours: ['Idempotency-Key'],
  success: { status: 201, body: task, headers: ['Location'] },
  docs: {
    summary: 'Create a task',
    description: 'The task goes into `projectId`, which must exist in your tenant and not be Archived.',
    errors: { 404: ['projectNotFound'], 409: ['projectArchived'] },
  },
  async handle({ principal, body, idempotency }) {
    return { created: await createTask(principal.tenantId, principal.objectId, body, idempotency) };
  },
});

app.http('tasks-create', { methods: ['POST'], route: apiRoute('tasks'), authLevel: 'anonymous', handler: tasksCreate });
