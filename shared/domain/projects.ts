import { conflict, invalid } from './errors.js';
import { MAX_MEMBERS, type Project, type ProjectStatus, type UpdateProjectBody } from '../schemas/projects.js';
import { email } from '../schemas/validation.js';

/** The contract's status moves. Archived has none: an archived project is read-only. */
export const STATUS_MOVES: Readonly<Record<ProjectStatus, readonly ProjectStatus[]>> = {
  Planning: ['Active', 'Archived'],
  Active: ['OnHold', 'Completed', 'Archived'],
  OnHold: ['Active', 'Archived'],
  Completed: ['Active', 'Archived'],
  Archived: [],
};

/** A new project is Active, whatever the request says. */
export const INITIAL_STATUS: ProjectStatus = 'Active';

/** Same status is a no-op; a move the contract does not list is a conflict naming the allowed ones. */
export function assertStatusMove(from: ProjectStatus, to: ProjectStatus): void {
  if (from === to || STATUS_MOVES[from].includes(to)) return;
  throw conflict('statusMoveNotAllowed', { from, to, allowed: STATUS_MOVES[from].join(', ') || '-' });
}

/**
 * An Archived project is read-only, and so are its tasks: nothing in it changes and nothing is added
 * to it. It can still be deleted.
 */
export function assertWritable(project: Pick<Project, 'id' | 'status'>): void {
  if (project.status === 'Archived') throw conflict('projectArchived', { id: project.id });
}

// Made once: a zod schema costs more to build than to check a string with.
const CALLER_EMAIL = email();

/**
 * The owner of a new project: the one given, or else the caller's e-mail, which must pass the same
 * rule as an e-mail in a body (an owner nobody could search for is no owner).
 */
export function ownerOf(given: string | undefined, callerEmail: string | undefined): string {
  if (given !== undefined) return given;
  const fromToken = CALLER_EMAIL.safeParse(callerEmail);
  if (!fromToken.success) throw invalid('ownerRequired');
  return fromToken.data;
}

/** Members are lower-cased, de-duplicated, and always include the owner, first. */
export function membersWithOwner(owner: string, members: readonly string[]): string[] {
  const all = [...new Set([owner, ...members])];
  if (all.length > MAX_MEMBERS) throw invalid('tooManyMembers', { limit: MAX_MEMBERS });
  return all;
}

/**
 * A project after a change of the fields given, following the project rules: nothing changes in an
 * Archived one, the status moves only as the contract lists, and the owner stays among the members.
 */
export function changed<P extends Project & { nameSort: string }>(current: P, changes: UpdateProjectBody, now: string): P {
  assertWritable(current);
  if (changes.status) assertStatusMove(current.status, changes.status);
  const owner = changes.owner ?? current.owner;
  const name = changes.name ?? current.name;
  return {
    ...current,
    name,
    nameSort: name.toLowerCase(),
    description: changes.description ?? current.description,
    status: changes.status ?? current.status,
    owner,
    members: membersWithOwner(owner, changes.members ?? current.members),
    updatedAt: now,
  };
}
