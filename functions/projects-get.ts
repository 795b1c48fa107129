import { app } from '@azure/functions';
import { getProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { notModifiedOr } from '../shared/http/responses.js';
import { project } from '../shared/schemas/projects.js';

export const projectsGet = endpoint({
  permission: 'projects:read',
  docs: {
    summary: 'Read a project',
    success: { status: 200, body: project, headers: ['ETag'] },
    honours: ['If-None-Match'],
    errors: { 404: ['projectNotFound'] },
  },
  async handle({ principal, request }) {
    return notModifiedOr(request, await getProject(principal, request.params.projectId ?? ''));
  },
});

app.http('projects-get', { methods: ['GET'], route: 'projects/{projectId}', authLevel: 'anonymous', handler: projectsGet });
