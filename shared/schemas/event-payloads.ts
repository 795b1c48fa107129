/**
 * What a receiver gets for each kind of event, as the OpenAPI document describes it under `webhooks`:
 * `{ type, timestamp, data }`, where `data` is the resource as `GET` shows it after the change, or
 * what is left of it after a delete. The app sends the events' stored `data` (shared/data/events.ts);
 * these describe it for receivers and generated clients.
 */
import { z } from 'zod';
import { timestamp } from './common.js';
import type { EventType } from './events.js';
import { project, projectId } from './projects.js';
import { ragJob } from './rag.js';
import { task, taskId } from './tasks.js';
import { webhook } from './webhooks.js';

const body = <T extends readonly [EventType, ...EventType[]], D extends z.ZodType>(types: T, data: D) =>
  z.object({ type: z.enum(types).describe("The event's type"), timestamp: timestamp.describe('When the change was made'), data });

export const projectEventBody = body(['project.created', 'project.updated'], project);
export const projectDeletedEventBody = body(
  ['project.deleted'],
  z.object({ id: projectId, deletedTasks: z.number().int().min(0).describe('Tasks the delete removed with the project; they send no task.deleted') }),
);
export const taskEventBody = body(['task.created', 'task.updated'], task);
export const taskDeletedEventBody = body(['task.deleted'], z.object({ id: taskId, projectId }));
export const ragJobEventBody = body(['rag.job.succeeded', 'rag.job.failed'], ragJob);
export const pingEventBody = body(['webhook.ping'], webhook);

/** Each event type's body, and what it reports. */
export const EVENT_BODIES: Record<EventType, { schema: z.ZodType; summary: string }> = {
  'project.created': { schema: projectEventBody, summary: 'A project was created' },
  'project.updated': { schema: projectEventBody, summary: 'A project was changed' },
  'project.deleted': { schema: projectDeletedEventBody, summary: 'A project was deleted, with its tasks' },
  'task.created': { schema: taskEventBody, summary: 'A task was created' },
  'task.updated': { schema: taskEventBody, summary: 'A task was changed' },
  'task.deleted': { schema: taskDeletedEventBody, summary: 'A task was deleted' },
  'rag.job.succeeded': { schema: ragJobEventBody, summary: 'A RAG index rebuild succeeded' },
  'rag.job.failed': { schema: ragJobEventBody, summary: 'A RAG index rebuild failed' },
  'webhook.ping': { schema: pingEventBody, summary: 'A subscription was pinged (POST /api/webhooks/{webhookId}/ping)' },
};
