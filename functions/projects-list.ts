import { app } from '@azure/functions';
import { z } from 'zod';
import { listProjects } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { json, nextPageLink } from '../shared/http/responses.js';
import { listProjectsQuery, project } from '../shared/schemas/projects.js';

export const projectsList = endpoint({
  permission: 'projects:read',
  query: listProjectsQuery,
  docs: {
    summary: 'List projects',
    description: '`q` matches any part of the name, ignoring case; `member` finds the projects a person belongs to.',
    success: { status: 200, body: z.array(project), headers: ['Link'] },
  },
  async handle({ principal, query, request }) {
    const page = await listProjects(principal, query);
    return json(200, page.items, nextPageLink(request.url, page.nextCursor));
  },
});

app.http('projects-list', { methods: ['GET'], route: 'projects', authLevel: 'anonymous', handler: projectsList });
