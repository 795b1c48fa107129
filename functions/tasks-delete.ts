import { app } from '@azure/functions';
import { deleteTask } from '../shared/data/tasks-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { parseIfMatch } from '../shared/http/etag.js';
import { noContent } from '../shared/http/responses.js';

export const tasksDelete = endpoint({
  permission: 'tasks:delete',
  docs: {
    summary: 'Delete a task',
    success: { status: 204 },
    honours: ['If-Match'],
    errors: { 404: ['taskNotFound'], 409: ['projectArchived'] },
  },
  async handle({ principal, request }) {
    await deleteTask(principal, request.params.taskId ?? '', parseIfMatch(request.headers.get('if-match')));
    return noContent();
  },
});

app.http('tasks-delete', { methods: ['DELETE'], route: 'tasks/{taskId}', authLevel: 'anonymous', handler: tasksDelete });
