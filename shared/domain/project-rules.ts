import { ApiError, conflict } from '../errors.js';
import { MAX_MEMBERS, type ProjectStatus } from '../schemas/projects.js';

/** The contract's status moves. Archived has none: an archived project is read-only. */
export const STATUS_MOVES: Readonly<Record<ProjectStatus, readonly ProjectStatus[]>> = {
  Planning: ['Active', 'Archived'],
  Active: ['OnHold', 'Completed', 'Archived'],
  OnHold: ['Active', 'Archived'],
  Completed: ['Active', 'Archived'],
  Archived: [],
};

/** Same status is a no-op; a move the contract does not list is a 409 naming the allowed ones. */
export function assertStatusMove(from: ProjectStatus, to: ProjectStatus): void {
  if (from === to || STATUS_MOVES[from].includes(to)) return;
  throw conflict('statusMoveNotAllowed', { from, to, allowed: STATUS_MOVES[from].join(', ') || '-' });
}

/** Members are lower-cased, de-duplicated, and always include the owner. */
export function membersWithOwner(owner: string, members: readonly string[]): string[] {
  const all = [...new Set([owner, ...members])];
  if (all.length > MAX_MEMBERS) throw new ApiError(400, 'tooManyMembers', { limit: MAX_MEMBERS });
  return all;
}
