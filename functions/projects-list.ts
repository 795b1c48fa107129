import { app } from '@azure/functions';
import { z } from 'zod';
import { listProjects } from '../shared/data/projects-repository.js';
import { endpoint } from '../shared/http/endpoint.js';
import { listProjectsQuery, project } from '../shared/schemas/projects.js';

export const projectsList = endpoint({
  permission: 'projects:read',
  query: listProjectsQuery,
  success: { status: 200, body: z.array(project), headers: ['Link'] },
  docs: {
    summary: 'List projects',
    description: '`q` matches any part of the name, ignoring case; `member` finds the projects a person belongs to.',
  },
  async handle({ principal, query }) {
    const { items, nextCursor } = await listProjects(principal, query);
    return { body: items, nextCursor };
  },
});

app.http('projects-list', { methods: ['GET'], route: 'projects', authLevel: 'anonymous', handler: projectsList });
