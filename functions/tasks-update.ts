import { app } from '@azure/functions';
import { updateTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { parseIfMatch } from '../shared/http/etag.js';
import { resource } from '../shared/http/responses.js';
import { task, updateTaskBody } from '../shared/schemas/tasks.js';

export const tasksUpdate = endpoint({
  permission: 'tasks:write',
  body: updateTaskBody,
  docs: {
    summary: 'Update a task',
    description: "Changes the fields given and keeps the others; a task cannot move to another project. An Archived project's tasks are read-only.",
    success: { status: 200, body: task, headers: ['ETag'] },
    honours: ['If-Match'],
    errors: { 404: ['taskNotFound'], 409: ['projectArchived'] },
  },
  async handle({ principal, body, request }) {
    const ifMatch = parseIfMatch(request.headers.get('if-match'));
    return resource(200, await updateTask(principal, request.params.taskId ?? '', body, ifMatch));
  },
});

app.http('tasks-update', { methods: ['PUT'], route: 'tasks/{taskId}', authLevel: 'anonymous', handler: tasksUpdate });
