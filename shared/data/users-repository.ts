import type { Role } from '../roles.js';
import { BoundedMap } from '../lib/bounded-map.js';
import { notFound } from '../domain/errors.js';
import { user, type ListUsersQuery, type User } from '../schemas/users.js';
import { cosmosStatus } from './cosmos.js';
import type { Page } from './paging.js';
import { fieldsOf, readVisible, tenantData, type DocumentKind } from './tenant-data.js';
import { listPage, type ListFilters } from './tenant-queries.js';

interface UserDocument extends User {
  tenantId: string;
  type: 'user';
  /** Lower-cased display name, for prefix search and sorting. */
  nameSort: string;
  _etag: string;
}

const REFRESH_INTERVAL_MS = 15 * 60 * 1000;
const REMEMBERED_CALLERS = 10_000;

const users: DocumentKind<UserDocument, User> = {
  type: 'user',
  resourceOf: fieldsOf(user),
  missing: (id) => notFound('userNotFound', { id }),
};

/** A caller as its token shows it: only users are recorded, not apps. */
export interface SeenCaller {
  kind: 'user' | 'app';
  objectId: string;
  email?: string | undefined;
  displayName?: string | undefined;
  roles: Role[];
}

/** Callers this process recorded lately: what it wrote and when. */
const recentlyRecorded = new BoundedMap<string, { fingerprint: string; at: number }>(REMEMBERED_CALLERS);

/**
 * Records a user on first use and refreshes the record at most every 15 minutes, or at once when
 * the token shows a new e-mail, name or roles. Most requests cost no write at all.
 */
export async function recordCaller(tenantId: string, caller: SeenCaller, now = Date.now()): Promise<void> {
  if (caller.kind !== 'user') return;
  const actor = caller.objectId;
  const key = `${tenantId}/${actor}`;
  const fingerprint = JSON.stringify([caller.email, caller.displayName, caller.roles]);
  const known = recentlyRecorded.get(key);
  if (known && known.fingerprint === fingerprint && now - known.at < REFRESH_INTERVAL_MS) return;

  const documents = await tenantData();
  const seen = new Date(now).toISOString();
  // Stored NFC-normalised, as every name is, so that a search (NFC too) finds it however the directory spelled it.
  const displayName = caller.displayName?.normalize('NFC');
  const profile = {
    email: caller.email ?? null,
    displayName: displayName ?? null,
    nameSort: (displayName ?? '').toLowerCase(),
    roles: caller.roles,
    lastSeenAt: seen,
  };
  // The object id is the document id: a GUID cannot meet the PRJ-, TSK- and other ids of the partition.
  const id = actor;
  const refresh = () => documents.item(id, tenantId).patch(Object.entries(profile).map(([name, value]) => ({ op: 'set' as const, path: `/${name}`, value })));
  try {
    await refresh();
  } catch (error) {
    if (cosmosStatus(error) !== 404) throw error;
    const document: Omit<UserDocument, '_etag'> = { id, tenantId, type: 'user', ...profile, createdAt: seen };
    try {
      await documents.items.create(document);
    } catch (createError) {
      // Another call recorded the same first call a moment ago: its first sighting stands, and this call's token is written
      // over it, as a refresh would. Its token may carry other roles, and this caller is remembered as recorded below.
      if (cosmosStatus(createError) !== 409) throw createError;
      await refresh();
    }
  }
  recentlyRecorded.set(key, { fingerprint, at: now });
}

/** The caller's own record. */
export async function getCurrentUser(tenantId: string, actor: string): Promise<User> {
  return users.resourceOf(await readVisible(users, tenantId, actor));
}

const FILTERS: ListFilters<ListUsersQuery> = {
  q: '(STARTSWITH(c.nameSort, @q) OR STARTSWITH(c.email, @q))',
  role: 'ARRAY_CONTAINS(c.roles, @role)',
};

/** The users of the tenant who have called the API, by name. */
export function listRecordedUsers(tenantId: string, query: ListUsersQuery): Promise<Page<User>> {
  return listPage(users, tenantId, query, { filters: FILTERS, orderBy: 'c.nameSort ASC' });
}
