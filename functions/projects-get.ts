import { app } from '@azure/functions';
import { getProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { notModifiedOr } from '../shared/http/responses.js';

export const projectsGet = endpoint({
  permission: 'projects:read',
  async handle({ principal, request }) {
    return notModifiedOr(request, await getProject(principal, request.params.projectId ?? ''));
  },
});

app.http('projects-get', { methods: ['GET'], route: 'projects/{projectId}', authLevel: 'anonymous', handler: projectsGet });
