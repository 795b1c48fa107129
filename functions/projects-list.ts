import { app } from '@azure/functions';
import { listProjects } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { listProjectsQuery, projectListItem } from '../shared/schemas/projects.js';

export const projectsList = endpoint({
  permission: 'projects:read',
  query: listProjectsQuery,
  success: { status: 200, page: projectListItem },
  docs: {
    summary: 'List projects',
    description: '`q` matches any part of the name, ignoring case; `member` finds the projects a person belongs to.',
  },
  async handle({ principal, query }) {
    return { page: await listProjects(principal.tenantId, query) };
  },
});

app.http('projects-list', { methods: ['GET'], route: apiRoute('projects'), authLevel: 'anonymous', handler: projectsList });
