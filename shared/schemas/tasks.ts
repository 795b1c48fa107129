import { z } from 'zod';
import { atLeastOneField, email, patterned } from './validation.js';
import { listedWithETag, pagingParameters, type PathParameter, recordDescription, recordStamps, recordTitle, sortParameter } from './common.js';
import { projectId } from './projects.js';

export const TASK_STATUSES = ['Todo', 'InProgress', 'Blocked', 'Done'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
/** In rank order: sorting by priority follows this, not the spelling. */
export const TASK_PRIORITIES = ['Low', 'Medium', 'High', 'Urgent'] as const;
export type TaskPriority = (typeof TASK_PRIORITIES)[number];

export const taskId = patterned(/^TSK-[1-9]\d{0,14}$/, 'idForm', { example: 'TSK-1001' });
export const taskIdParameter: PathParameter = { schema: taskId, notFound: 'taskNotFound', example: 'TSK-1001' };

/** A calendar date that exists: `2026-02-30` is refused, not rolled over. */
export const calendarDate = z.iso.date();

export const task = z.object({
  id: taskId,
  projectId,
  title: z.string(),
  description: z.string(),
  status: z.enum(TASK_STATUSES),
  priority: z.enum(TASK_PRIORITIES),
  assignee: z.email().nullable(),
  dueDate: calendarDate.nullable(),
  ...recordStamps,
});
export type Task = z.infer<typeof task>;

/** A task as a list shows it: with `etag`, the ETag a read of it answers. */
export const taskListItem = listedWithETag(task);

export const createTaskBody = z.strictObject({
  projectId,
  title: recordTitle,
  description: recordDescription.optional(),
  status: z.enum(TASK_STATUSES).optional(),
  priority: z.enum(TASK_PRIORITIES).optional(),
  assignee: email().nullable().optional(),
  dueDate: calendarDate.nullable().optional(),
});
export type CreateTaskBody = z.infer<typeof createTaskBody>;

/** What a create takes but the project (a task stays in its project): the fields given replace the stored ones. */
export const updateTaskBody = atLeastOneField(createTaskBody.omit({ projectId: true }).partial());
export type UpdateTaskBody = z.infer<typeof updateTaskBody>;

export const listTasksQuery = z.strictObject({
  projectId: projectId.optional(),
  status: z.enum(TASK_STATUSES).optional(),
  assignee: email().optional(),
  dueBefore: calendarDate.optional(),
  sort: sortParameter(['createdAt', 'dueDate', 'priority']).default('-createdAt'),
  ...pagingParameters,
});
export type ListTasksQuery = z.infer<typeof listTasksQuery>;
