import { z } from 'zod';
import { errorBody } from '../schemas/common.js';
import { createProjectBody, project, updateProjectBody, type Project } from '../schemas/projects.js';
import { ragJob, startRagIndexBody, type RagJob } from '../schemas/rag.js';
import { createTaskBody, task, updateTaskBody, type Task } from '../schemas/tasks.js';
import { user, type User } from '../schemas/users.js';

/**
 * The names the document gives the schemas it shares (generated clients name their types after
 * them) and an example of each. Operations point at them with the zod schemas their definitions
 * use; the document builder refuses a JSON body whose schema has no name here.
 */

const CREATED_BY = '3f2b8c1d-5e6a-4b7c-8d9e-0a1b2c3d4e5f';

const exampleProject: Project = {
  id: 'PRJ-1001',
  name: 'Onboarding 2027',
  description: 'New-hire course',
  status: 'Active',
  owner: 'dev@contoso.test',
  members: ['dev@contoso.test', 'kim@contoso.test'],
  createdAt: '2026-11-21T09:30:00.000Z',
  updatedAt: '2026-11-21T09:30:00.000Z',
  createdBy: CREATED_BY,
};

const exampleTask: Task = {
  id: 'TSK-1001',
  projectId: exampleProject.id,
  title: 'Record the welcome video',
  description: '',
  status: 'Todo',
  priority: 'High',
  assignee: 'kim@contoso.test',
  dueDate: '2027-01-15',
  createdAt: '2026-11-21T09:35:00.000Z',
  updatedAt: '2026-11-21T09:35:00.000Z',
  createdBy: CREATED_BY,
};

const exampleUser: User = {
  id: CREATED_BY,
  email: 'dev@contoso.test',
  displayName: 'Dev User',
  roles: ['LMS.Admin'],
  createdAt: '2026-11-20T08:00:00.000Z',
  lastSeenAt: '2026-11-21T09:30:00.000Z',
};

const exampleRagJob: RagJob = {
  jobId: '5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b',
  status: 'Queued',
  mode: 'incremental',
  projectIds: null,
  requestedAt: '2026-11-21T10:00:00.000Z',
  requestedBy: CREATED_BY,
  startedAt: null,
  completedAt: null,
  counts: null,
  error: null,
};

/** The body of `GET /api/openapi.json`: an OpenAPI document, this one. */
export const openApiDocument = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

export const NAMED_SCHEMAS = new Map<z.ZodType, { name: string; example: unknown }>([
  [project, { name: 'Project', example: exampleProject }],
  [task, { name: 'Task', example: exampleTask }],
  [user, { name: 'User', example: exampleUser }],
  [ragJob, { name: 'RagJob', example: exampleRagJob }],
  // Error answers have an example for each message instead (document.ts).
  [errorBody, { name: 'Error', example: undefined }],
  [openApiDocument, { name: 'OpenApiDocument', example: { openapi: '3.1.0', info: { title: 'LMS Platform API', version: '0.1.0' }, paths: {} } }],
  [
    createProjectBody,
    {
      name: 'CreateProjectRequest',
      example: { name: 'Onboarding 2027', description: 'New-hire course', members: ['kim@contoso.test'] } satisfies z.input<typeof createProjectBody>,
    },
  ],
  [updateProjectBody, { name: 'UpdateProjectRequest', example: { status: 'OnHold' } satisfies z.input<typeof updateProjectBody> }],
  [
    createTaskBody,
    {
      name: 'CreateTaskRequest',
      example: {
        projectId: 'PRJ-1001',
        title: 'Record the welcome video',
        priority: 'High',
        assignee: 'kim@contoso.test',
        dueDate: '2027-01-15',
      } satisfies z.input<typeof createTaskBody>,
    },
  ],
  [updateTaskBody, { name: 'UpdateTaskRequest', example: { status: 'Done' } satisfies z.input<typeof updateTaskBody> }],
  [startRagIndexBody, { name: 'StartRagIndexRequest', example: { mode: 'full', projectIds: ['PRJ-1001'] } satisfies z.input<typeof startRagIndexBody> }],
]);
