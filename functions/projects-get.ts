import { app } from '@azure/functions';
import { getProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { project, projectIdParameter } from '../shared/schemas/projects.js';

export const projectsGet = endpoint({
  permission: 'projects:read',
  params: { projectId: projectIdParameter },
  honours: ['If-None-Match'],
  success: { status: 200, body: project },
  docs: { summary: 'Read a project' },
  async handle({ principal, params }) {
    return { body: await getProject(principal.tenantId, params.projectId) };
  },
});

app.http('projects-get', { methods: ['GET'], route: apiRoute('projects/{projectId}'), authLevel: 'anonymous', handler: projectsGet });
