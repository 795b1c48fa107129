import { app } from '@azure/functions';
import { idempotentRequest } from '../shared/data/idempotency.js';
import { createProject } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { entityTag } from '../shared/http/etag.js';
import { json } from '../shared/http/responses.js';
import { createProjectBody } from '../shared/schemas/projects.js';

export const projectsCreate = endpoint({
  permission: 'projects:write',
  body: createProjectBody,
  async handle({ principal, body, request }) {
    const created = await createProject(principal, body, idempotentRequest(request, principal, 'projects-create', body));
    return json(201, created.project, {
      Location: `${new URL(request.url).pathname}/${created.project.id}`,
      ...(created.etag ? { ETag: entityTag(created.etag) } : {}),
      ...(created.replayed ? { 'Idempotent-Replayed': 'true' } : {}),
    });
  },
});

app.http('projects-create', { methods: ['POST'], route: 'projects', authLevel: 'anonymous', handler: projectsCreate });
