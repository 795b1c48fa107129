import { z } from 'zod';
import { atLeastOneField, email, patterned, text } from './validation.js';
import { listedWithETag, pagingParameters, type PathParameter, recordDescription, recordStamps, recordTitle, sortParameter } from './common.js';

export const PROJECT_STATUSES = ['Planning', 'Active', 'OnHold', 'Completed', 'Archived'] as const;
export type ProjectStatus = (typeof PROJECT_STATUSES)[number];
export const MAX_MEMBERS = 500;

export const projectId = patterned(/^PRJ-[1-9]\d{0,14}$/, 'idForm', { example: 'PRJ-1001' });
export const projectIdParameter: PathParameter = { schema: projectId, notFound: 'projectNotFound', example: 'PRJ-1001' };

export const project = z.object({
  id: projectId,
  name: z.string(),
  description: z.string(),
  status: z.enum(PROJECT_STATUSES),
  owner: z.email(),
  members: z.array(z.email()),
  ...recordStamps,
});
export type Project = z.infer<typeof project>;

/** A project as a list shows it: with `etag`, the ETag a read of it answers. */
export const projectListItem = listedWithETag(project);

export const createProjectBody = z.strictObject({
  name: recordTitle,
  description: recordDescription.optional(),
  owner: email().optional(),
  members: z.array(email()).max(MAX_MEMBERS).optional(),
});
export type CreateProjectBody = z.infer<typeof createProjectBody>;

/** What a create takes, and the status: the fields given replace the stored ones. */
export const updateProjectBody = atLeastOneField(createProjectBody.extend({ status: z.enum(PROJECT_STATUSES) }).partial());
export type UpdateProjectBody = z.infer<typeof updateProjectBody>;

export const listProjectsQuery = z.strictObject({
  status: z.enum(PROJECT_STATUSES).optional(),
  owner: email().optional(),
  member: email().optional(),
  q: text({ min: 1, max: 200 })
    .transform((value) => value.toLowerCase())
    .optional(),
  sort: sortParameter(['createdAt', 'name']).default('-createdAt'),
  ...pagingParameters,
});
export type ListProjectsQuery = z.infer<typeof listProjectsQuery>;
