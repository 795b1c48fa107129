import { app } from '@azure/functions';
import { idempotentRequest } from '../shared/data/idempotency.js';
import { createProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { created } from '../shared/http/responses.js';
import { createProjectBody, project } from '../shared/schemas/projects.js';

export const projectsCreate = endpoint({
  permission: 'projects:write',
  body: createProjectBody,
  docs: {
    summary: 'Create a project',
    description:
      "A new project is `Active`. The owner defaults to the caller's e-mail (app-only tokens have none, so they must " +
      'give it) and is always the first member; members are lower-cased and de-duplicated.',
    success: { status: 201, body: project, headers: ['Location', 'ETag'] },
    honours: ['Idempotency-Key'],
    errors: { 400: ['ownerRequired', 'tooManyMembers'] },
  },
  async handle({ principal, body, request }) {
    const result = await createProject(principal, body, idempotentRequest(request, principal, 'projects-create', body));
    return created(request.url, result);
  },
});

app.http('projects-create', { methods: ['POST'], route: 'projects', authLevel: 'anonymous', handler: projectsCreate });
