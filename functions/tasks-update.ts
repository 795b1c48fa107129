import { app } from '@azure/functions';
import { updateTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { parseIfMatch } from '../shared/http/etag.js';
import { resource } from '../shared/http/responses.js';
import { updateTaskBody } from '../shared/schemas/tasks.js';

export const tasksUpdate = endpoint({
  permission: 'tasks:write',
  body: updateTaskBody,
  async handle({ principal, body, request }) {
    const ifMatch = parseIfMatch(request.headers.get('if-match'));
    return resource(200, await updateTask(principal, request.params.taskId ?? '', body, ifMatch));
  },
});

app.http('tasks-update', { methods: ['PUT'], route: 'tasks/{taskId}', authLevel: 'anonymous', handler: tasksUpdate });
