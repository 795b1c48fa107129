import { app } from '@azure/functions';
import { deleteProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { projectIdParameter } from '../shared/schemas/projects.js';

export const projectsDelete = endpoint({
  permission: 'projects:delete',
  params: { projectId: projectIdParameter },
  honours: ['If-Match'],
  success: { status: 204 },
  docs: { summary: 'Delete a project and its tasks' },
  async handle({ principal, params, ifMatch }) {
    await deleteProject(principal.tenantId, params.projectId, ifMatch);
    return {};
  },
});

app.http('projects-delete', { methods: ['DELETE'], route: apiRoute('projects/{projectId}'), authLevel: 'anonymous', handler: projectsDelete });
