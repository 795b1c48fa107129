import { app } from '@azure/functions';
import { createProject } from '../shared/data/projects-repository.js';
import { ownerOf } from '../shared/domain/projects.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { createProjectBody, project } from '../shared/schemas/projects.js';

export const projectsCreate = endpoint({
  permission: 'projects:write',
  body: createProjectBody,
  honours: ['Idempotency-Key'],
  success: { status: 201, body: project, headers: ['Location'] },
  docs: {
    summary: 'Create a project',
    description:
      "A new project is `Active`. The owner defaults to the caller's e-mail (app-only tokens have none, so they must give it) and is always " +
      'the first member; members are lower-cased and de-duplicated.',
    errors: { 400: ['ownerRequired', 'tooManyMembers'] },
  },
  async handle({ principal, body, idempotency }) {
    return { created: await createProject(principal.tenantId, principal.objectId, ownerOf(body.owner, principal.email), body, idempotency) };
  },
});

app.http('projects-create', { methods: ['POST'], route: apiRoute('projects'), authLevel: 'anonymous', handler: projectsCreate });
