import { app } from '@azure/functions';
import { getProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { entityTag, isNotModified } from '../shared/http/etag.js';
import { json } from '../shared/http/responses.js';

export const projectsGet = endpoint({
  permission: 'projects:read',
  async handle({ principal, request }) {
    const { project, etag } = await getProject(principal, request.params.projectId ?? '');
    const headers = { ETag: entityTag(etag) };
    if (isNotModified(request.headers.get('if-none-match'), etag)) return { status: 304, headers };
    return json(200, project, headers);
  },
});

app.http('projects-get', { methods: ['GET'], route: 'projects/{projectId}', authLevel: 'anonymous', handler: projectsGet });
