import { app } from '@azure/functions';
import { idempotentRequest } from '../shared/data/idempotency.js';
import { createProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { created } from '../shared/http/responses.js';
import { createProjectBody } from '../shared/schemas/projects.js';

export const projectsCreate = endpoint({
  permission: 'projects:write',
  body: createProjectBody,
  async handle({ principal, body, request }) {
    const result = await createProject(principal, body, idempotentRequest(request, principal, 'projects-create', body));
    return created(request.url, result);
  },
});

app.http('projects-create', { methods: ['POST'], route: 'projects', authLevel: 'anonymous', handler: projectsCreate });
