import { z } from 'zod';
import { entityTag } from '../http/etag.js';
import { requestedJob } from '../domain/rag-jobs.js';
import { errorBody } from '../schemas/common.js';
import { pingEventBody, projectDeletedEventBody, projectEventBody, ragJobEventBody, taskDeletedEventBody, taskEventBody } from '../schemas/event-payloads.js';
import { event, eventListItem, type Event } from '../schemas/events.js';
import { createProjectBody, project, projectListItem, updateProjectBody, type Project } from '../schemas/projects.js';
import { jobIdParameter, ragJob, ragJobListItem, startRagIndexBody, type RagJob } from '../schemas/rag.js';
import { createTaskBody, task, taskListItem, updateTaskBody, type Task } from '../schemas/tasks.js';
import { user, type User } from '../schemas/users.js';
import {
  createWebhookBody,
  delivery,
  updateWebhookBody,
  webhook,
  webhookListItem,
  webhookWithSecret,
  type Delivery,
  type Webhook,
} from '../schemas/webhooks.js';

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
  jobId: jobIdParameter.example,
  ...requestedJob({ mode: 'incremental' }, CREATED_BY, '2026-11-21T10:00:00.000Z'),
};

const exampleWebhook: Webhook = {
  id: 'WHK-1001',
  url: 'https://hooks.example.com/lms',
  events: ['project.created', 'project.updated', 'project.deleted'],
  description: 'Sync projects to the HR system',
  active: true,
  disabledReason: null,
  createdAt: '2026-11-21T11:00:00.000Z',
  updatedAt: '2026-11-21T11:00:00.000Z',
};

const exampleDelivery: Delivery = {
  id: 'dlv_msg_2f1c9a0e4b7d4e8a9c3b1d2e5f6a7b8c_WHK-1001',
  eventId: 'msg_2f1c9a0e4b7d4e8a9c3b1d2e5f6a7b8c',
  type: 'project.created',
  status: 'Pending',
  attempts: 1,
  lastStatusCode: 503,
  lastError: 'The receiver answered 503.',
  nextAttemptAt: '2026-11-21T11:05:05.000Z',
  createdAt: '2026-11-21T11:05:00.000Z',
};

const exampleEvent: Event = {
  id: 'msg_2f1c9a0e4b7d4e8a9c3b1d2e5f6a7b8c',
  type: 'project.created',
  timestamp: '2026-11-21T11:05:00.000Z',
  data: { ...exampleProject },
};

/** A resource as a list shows it: with the ETag a read of it answers. */
const listed = <R extends object>(resource: R) => ({ ...resource, etag: entityTag(resource) });

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
  [webhook, { name: 'Webhook', example: exampleWebhook }],
  [webhookWithSecret, { name: 'WebhookWithSecret', example: { ...exampleWebhook, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } }],
  [delivery, { name: 'WebhookDelivery', example: exampleDelivery }],
  [event, { name: 'Event', example: exampleEvent }],
  [projectListItem, { name: 'ProjectListItem', example: listed(exampleProject) }],
  [taskListItem, { name: 'TaskListItem', example: listed(exampleTask) }],
  [ragJobListItem, { name: 'RagJobListItem', example: listed(exampleRagJob) }],
  [webhookListItem, { name: 'WebhookListItem', example: listed(exampleWebhook) }],
  [eventListItem, { name: 'EventListItem', example: listed(exampleEvent) }],
  // What receivers get (the document's webhooks): their bodies have no example, which the reference page makes from the schema.
  [projectEventBody, { name: 'ProjectEvent', example: undefined }],
  [projectDeletedEventBody, { name: 'ProjectDeletedEvent', example: undefined }],
  [taskEventBody, { name: 'TaskEvent', example: undefined }],
  [taskDeletedEventBody, { name: 'TaskDeletedEvent', example: undefined }],
  [ragJobEventBody, { name: 'RagJobEvent', example: undefined }],
  [pingEventBody, { name: 'PingEvent', example: undefined }],
  // Error answers have an example for each message instead (tools/openapi-document.ts).
  [errorBody, { name: 'Error', example: undefined }],
  [openApiDocument, { name: 'OpenApiDocument', example: { openapi: '3.1.0', info: { title: 'LMS Platform API', version: '1.0.0' }, paths: {} } }],
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
  [
    createWebhookBody,
    {
      name: 'CreateWebhookRequest',
      example: { url: 'https://hooks.example.com/lms', events: ['project.created'], description: 'Sync projects' } satisfies z.input<typeof createWebhookBody>,
    },
  ],
  [updateWebhookBody, { name: 'UpdateWebhookRequest', example: { active: true } satisfies z.input<typeof updateWebhookBody> }],
]);
