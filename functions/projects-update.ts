import { app } from '@azure/functions';
import { updateProject } from '../shared/data/projects-repository.js';
import { badRequest } from '../shared/errors.js';
import { endpoint } from '../shared/http/endpoint.js';
import { entityTag, parseIfMatch } from '../shared/http/etag.js';
import { json } from '../shared/http/responses.js';
import { updateProjectBody } from '../shared/schemas/projects.js';

export const projectsUpdate = endpoint({
  permission: 'projects:write',
  body: updateProjectBody,
  async handle({ principal, body, request }) {
    if (Object.keys(body).length === 0) throw badRequest('emptyUpdate');
    const ifMatch = parseIfMatch(request.headers.get('if-match'));
    const { project, etag } = await updateProject(principal, request.params.projectId ?? '', body, ifMatch);
    return json(200, project, { ETag: entityTag(etag) });
  },
});

app.http('projects-update', { methods: ['PUT'], route: 'projects/{projectId}', authLevel: 'anonymous', handler: projectsUpdate });
