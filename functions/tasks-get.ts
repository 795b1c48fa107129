import { app } from '@azure/functions';
import { getTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { notModifiedOr } from '../shared/http/responses.js';

export const tasksGet = endpoint({
  permission: 'tasks:read',
  async handle({ principal, request }) {
    return notModifiedOr(request, await getTask(principal, request.params.taskId ?? ''));
  },
});

app.http('tasks-get', { methods: ['GET'], route: 'tasks/{taskId}', authLevel: 'anonymous', handler: tasksGet });
