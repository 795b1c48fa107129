import { app } from '@azure/functions';
import { updateProject } from '../shared/data/projects-repository.js';
import { STATUS_MOVES } from '../shared/domain/project-rules.js';
import { endpoint } from '../shared/http/endpoint.js';
import { parseIfMatch } from '../shared/http/etag.js';
import { resource } from '../shared/http/responses.js';
import { project, updateProjectBody } from '../shared/schemas/projects.js';

export const projectsUpdate = endpoint({
  permission: 'projects:write',
  body: updateProjectBody,
  docs: {
    summary: 'Update a project',
    description: `Changes the fields given and keeps the others. Status moves: ${Object.entries(STATUS_MOVES)
      .filter(([, next]) => next.length)
      .map(([from, next]) => `${from} → ${next.join(' or ')}`)
      .join('; ')}. An Archived project is read-only (it can still be deleted).`,
    success: { status: 200, body: project, headers: ['ETag'] },
    honours: ['If-Match'],
    errors: { 400: ['tooManyMembers'], 404: ['projectNotFound'], 409: ['statusMoveNotAllowed', 'projectArchived'] },
  },
  async handle({ principal, body, request }) {
    const ifMatch = parseIfMatch(request.headers.get('if-match'));
    return resource(200, await updateProject(principal, request.params.projectId ?? '', body, ifMatch));
  },
});

app.http('projects-update', { methods: ['PUT'], route: 'projects/{projectId}', authLevel: 'anonymous', handler: projectsUpdate });
