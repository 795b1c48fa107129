import { app } from '@azure/functions';
import { listProjects } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { json, nextPageLink } from '../shared/http/responses.js';
import { listProjectsQuery } from '../shared/schemas/projects.js';

export const projectsList = endpoint({
  permission: 'projects:read',
  query: listProjectsQuery,
  async handle({ principal, query, request }) {
    const page = await listProjects(principal, query);
    return json(200, page.items, nextPageLink(request.url, page.nextCursor));
  },
});

app.http('projects-list', { methods: ['GET'], route: 'projects', authLevel: 'anonymous', handler: projectsList });
