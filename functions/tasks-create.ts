import { app } from '@azure/functions';
import { idempotentRequest } from '../shared/data/idempotency.js';
import { createTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { created } from '../shared/http/responses.js';
import { createTaskBody, task } from '../shared/schemas/tasks.js';

export const tasksCreate = endpoint({
  permission: 'tasks:write',
  body: createTaskBody,
  docs: {
    summary: 'Create a task',
    description: 'The task goes into `projectId`, which must exist in your tenant and not be Archived.',
    success: { status: 201, body: task, headers: ['Location', 'ETag'] },
    honours: ['Idempotency-Key'],
    errors: { 404: ['projectNotFound'], 409: ['projectArchived'] },
  },
  async handle({ principal, body, request }) {
    const result = await createTask(principal, body, idempotentRequest(request, principal, 'tasks-create', body));
    return created(request.url, result);
  },
});

app.http('tasks-create', { methods: ['POST'], route: 'tasks', authLevel: 'anonymous', handler: tasksCreate });
