import type { Principal } from '../auth/principal.js';
import { notFound } from '../errors.js';
import type { ListUsersQuery, User } from '../schemas/users.js';
import { cosmosStatus } from './cosmos.js';
import type { Page } from './paging.js';
import { listPage, readDocument, tenantData } from './tenant-data.js';

interface UserDocument extends User {
  tenantId: string;
  type: 'user';
  /** Lower-cased display name, for prefix search and sorting. */
  nameSort: string;
  _etag: string;
}

const REFRESH_INTERVAL_MS = 15 * 60 * 1000;
const REMEMBERED_CALLERS = 10_000;

function toUser(document: User): User {
  const { id, email, displayName, roles, createdAt, lastSeenAt } = document;
  return { id, email, displayName, roles, createdAt, lastSeenAt };
}

/** Callers this process recorded lately: what it wrote and when. Oldest entries go first when full. */
const recentlyRecorded = new Map<string, { fingerprint: string; at: number }>();

function remember(key: string, fingerprint: string, at: number): void {
  recentlyRecorded.delete(key);
  recentlyRecorded.set(key, { fingerprint, at });
  if (recentlyRecorded.size > REMEMBERED_CALLERS) recentlyRecorded.delete(recentlyRecorded.keys().next().value!);
}

/**
 * Records a user on first use and refreshes the record at most every 15 minutes, or at once when
 * the token shows a new e-mail, name or roles. Most requests cost no write at all.
 */
export async function recordCaller(principal: Principal, now = Date.now()): Promise<void> {
  if (principal.kind !== 'user') return;
  const key = `${principal.tenantId}/${principal.objectId}`;
  const fingerprint = JSON.stringify([principal.email, principal.displayName, principal.roles]);
  const known = recentlyRecorded.get(key);
  if (known && known.fingerprint === fingerprint && now - known.at < REFRESH_INTERVAL_MS) return;

  const documents = await tenantData();
  const seen = new Date(now).toISOString();
  const profile = {
    email: principal.email ?? null,
    displayName: principal.displayName ?? null,
    nameSort: (principal.displayName ?? '').toLowerCase(),
    roles: principal.roles,
    lastSeenAt: seen,
  };
  // The object id is the document id: a GUID cannot meet the PRJ-, TSK- and other ids of the partition.
  const id = principal.objectId;
  try {
    await documents.item(id, principal.tenantId).patch(Object.entries(profile).map(([name, value]) => ({ op: 'set' as const, path: `/${name}`, value })));
  } catch (error) {
    if (cosmosStatus(error) !== 404) throw error;
    const document: Omit<UserDocument, '_etag'> = { id, tenantId: principal.tenantId, type: 'user', ...profile, createdAt: seen };
    try {
      await documents.items.create(document);
    } catch (createError) {
      // Another instance recorded the same first call a moment ago: its record stands.
      if (cosmosStatus(createError) !== 409) throw createError;
    }
  }
  remember(key, fingerprint, now);
}

/** The caller's own record. */
export async function getCurrentUser(principal: Principal): Promise<User> {
  const document = await readDocument<UserDocument>(principal.tenantId, principal.objectId, 'user');
  if (!document) throw notFound('userNotFound', { id: principal.objectId });
  return toUser(document);
}

/** The users of the tenant who have called the API, by name. */
export async function listRecordedUsers(principal: Principal, query: ListUsersQuery): Promise<Page<User>> {
  const page = await listPage<UserDocument>({
    tenantId: principal.tenantId,
    type: 'user',
    filters: {
      q: ['(STARTSWITH(c.nameSort, @q) OR STARTSWITH(c.email, @q))', query.q],
      role: ['ARRAY_CONTAINS(c.roles, @role)', query.role],
    },
    orderBy: 'c.nameSort ASC',
    limit: query.limit,
    cursor: query.cursor,
  });
  return { items: page.items.map(toUser), nextCursor: page.nextCursor };
}
