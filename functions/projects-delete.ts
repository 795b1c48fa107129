import { app } from '@azure/functions';
import { deleteProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { parseIfMatch } from '../shared/http/etag.js';
import { noContent } from '../shared/http/responses.js';

export const projectsDelete = endpoint({
  permission: 'projects:delete',
  docs: {
    summary: 'Delete a project and its tasks',
    success: { status: 204 },
    honours: ['If-Match'],
    errors: { 404: ['projectNotFound'] },
  },
  async handle({ principal, request }) {
    await deleteProject(principal, request.params.projectId ?? '', parseIfMatch(request.headers.get('if-match')));
    return noContent();
  },
});

app.http('projects-delete', { methods: ['DELETE'], route: 'projects/{projectId}', authLevel: 'anonymous', handler: projectsDelete });
