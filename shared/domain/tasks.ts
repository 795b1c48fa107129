import { TASK_PRIORITIES, type TaskPriority, type TaskStatus } from '../schemas/tasks.js';

/** What a new task is when the request does not say. */
export const TASK_DEFAULTS: { status: TaskStatus; priority: TaskPriority } = { status: 'Todo', priority: 'Medium' };

/** 1 (Low) to 4 (Urgent): priorities sort by rank, not by spelling. */
export const priorityRank = (priority: TaskPriority): number => TASK_PRIORITIES.indexOf(priority) + 1;
