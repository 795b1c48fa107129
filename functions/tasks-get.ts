import { app } from '@azure/functions';
import { getTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { notModifiedOr } from '../shared/http/responses.js';
import { task } from '../shared/schemas/tasks.js';

export const tasksGet = endpoint({
  permission: 'tasks:read',
  docs: {
    summary: 'Read a task',
    success: { status: 200, body: task, headers: ['ETag'] },
    honours: ['If-None-Match'],
    errors: { 404: ['taskNotFound'] },
  },
  async handle({ principal, request }) {
    return notModifiedOr(request, await getTask(principal, request.params.taskId ?? ''));
  },
});

app.http('tasks-get', { methods: ['GET'], route: 'tasks/{taskId}', authLevel: 'anonymous', handler: tasksGet });
