import { app } from '@azure/functions';
import { updateProject } from '../shared/data/projects-repository.js';
import { STATUS_MOVES } from '../shared/domain/projects.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { project, projectIdParameter, updateProjectBody } from '../shared/schemas/projects.js';

const statusMoves = Object.entries(STATUS_MOVES)
  .filter(([, next]) => next.length)
  .map(([from, next]) => `${from} → ${next.join(' or ')}`)
  .join('; ');

export const projectsUpdate = endpoint({
  permission: 'projects:write',
  params: { projectId: projectIdParameter },
  body: updateProjectBody,
  honours: ['If-Match'],
  success: { status: 200, body: project },
  docs: {
    summary: 'Update a project',
    description:
      'Changes the fields given and keeps the others. A PUT of what is stored (once normalised as it would be stored) changes nothing: ' +
      'the same `updatedAt` and ETag, and no `project.updated` event. ' +
      `Status moves: ${statusMoves}; the same status is a no-op. An Archived project is read-only, 409 even for a PUT that would change nothing ` +
      '(it can still be deleted).',
    errors: { 400: ['tooManyMembers'], 409: ['statusMoveNotAllowed', 'projectArchived'] },
  },
  async handle({ principal, params, body, ifMatch }) {
    return { body: await updateProject(principal.tenantId, params.projectId, body, ifMatch) };
  },
});

app.http('projects-update', { methods: ['PUT'], route: apiRoute('projects/{projectId}'), authLevel: 'anonymous', handler: projectsUpdate });
