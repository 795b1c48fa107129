import { app } from '@azure/functions';
import { updateProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { parseIfMatch } from '../shared/http/etag.js';
import { resource } from '../shared/http/responses.js';
import { updateProjectBody } from '../shared/schemas/projects.js';

export const projectsUpdate = endpoint({
  permission: 'projects:write',
  body: updateProjectBody,
  async handle({ principal, body, request }) {
    const ifMatch = parseIfMatch(request.headers.get('if-match'));
    return resource(200, await updateProject(principal, request.params.projectId ?? '', body, ifMatch));
  },
});

app.http('projects-update', { methods: ['PUT'], route: 'projects/{projectId}', authLevel: 'anonymous', handler: projectsUpdate });
