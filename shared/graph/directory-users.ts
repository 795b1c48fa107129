import { onBehalfOf } from '../auth/on-behalf-of.js';
import type { Principal } from '../auth/principal.js';
import { graphSettings } from '../settings/read.js';
import { ApiError, badRequest } from '../errors.js';
import { decodeCursor, encodeCursor, type Page } from '../data/paging.js';
import { readBefore } from '../lib/read-before.js';
import type { ListUsersQuery, User } from '../schemas/users.js';

const REQUEST_TIMEOUT_MS = 10_000;
const SELECT = 'id,displayName,mail,userPrincipalName';

interface GraphUser {
  id: string;
  displayName: string | null;
  mail: string | null;
  userPrincipalName: string | null;
}

interface GraphPage {
  value: GraphUser[];
  '@odata.nextLink'?: string;
}

/** OData string literal: a single quote is written twice. */
const odataString = (value: string) => `'${value.replace(/'/g, "''")}'`;

function firstPageUrl(baseUrl: string, query: ListUsersQuery): string {
  const url = new URL(`${baseUrl}/v1.0/users`);
  url.searchParams.set('$select', SELECT);
  url.searchParams.set('$top', String(query.limit));
  if (query.q !== undefined) {
    const prefix = odataString(query.q);
    url.searchParams.set('$filter', `startswith(displayName,${prefix}) or startswith(mail,${prefix}) or startswith(userPrincipalName,${prefix})`);
  }
  return url.href;
}

function unavailable(retryAfter: string | null): ApiError {
  return new ApiError(503, 'directoryUnavailable', {}, { headers: { 'Retry-After': retryAfter && /^\d+$/.test(retryAfter) ? retryAfter : '5' } });
}

async function fetchPage(url: string, token: string): Promise<GraphPage> {
  let response: Response;
  // One deadline for the answer, its body included.
  const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  try {
    response = await fetch(url, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      signal,
      redirect: 'error',
    });
  } catch (error) {
    // Unreachable, refused or too slow: the upstream of this gateway failed.
    throw new ApiError(502, 'directoryUnavailable', {}, { cause: error });
  }
  if (response.status === 429 || response.status >= 500) throw unavailable(response.headers.get('retry-after'));
  if (response.status === 403) throw new ApiError(403, 'directoryAccessDenied');
  // What Graph refuses is a query the request made (its `q`): the caller's to change, never our 500.
  if (response.status === 400) throw new ApiError(400, 'directoryQueryRefused');
  if (!response.ok) throw new ApiError(502, 'directoryFailed', { status: response.status });
  return readPage(response, signal);
}

/** The page Graph sent. A body that is cut off, too slow (the same deadline) or not a page is Graph failing, never our 500. */
async function readPage(response: Response, signal: AbortSignal): Promise<GraphPage> {
  let page: Partial<GraphPage> | null;
  try {
    page = (await readBefore(signal, response.json())) as Partial<GraphPage> | null;
  } catch (error) {
    throw new ApiError(502, 'directoryUnavailable', {}, { cause: error });
  }
  if (!Array.isArray(page?.value)) throw new ApiError(502, 'directoryUnavailable');
  return page as GraphPage;
}

/**
 * The tenant's directory users from Microsoft Graph, read with the caller's own permissions through
 * On-Behalf-Of, one Graph page per API page. The cursor carries Graph's `@odata.nextLink`; it is
 * only ever followed to the configured Graph's users endpoint.
 */
export async function listDirectoryUsers(principal: Principal, query: ListUsersQuery): Promise<Page<User>> {
  if (query.role !== undefined) throw badRequest('roleFilterNeedsRecordedUsers');
  const { baseUrl, resource } = graphSettings();
  const scope = JSON.stringify(['directory-users', principal.tenantId, query.q]);
  let url = firstPageUrl(baseUrl, query);
  if (query.cursor !== undefined) {
    url = decodeCursor(scope, query.cursor);
    if (!url.startsWith(`${baseUrl}/v1.0/users?`)) throw badRequest('invalidCursor');
  }
  const token = await onBehalfOf(principal, [`${resource}/User.Read.All`]);
  const page = await fetchPage(url, token);
  const next = page['@odata.nextLink'];
  return {
    items: page.value.map((user) => ({
      id: user.id,
      email: user.mail?.toLowerCase() ?? null,
      displayName: user.displayName,
      roles: [],
      createdAt: null,
      lastSeenAt: null,
    })),
    nextCursor: next ? encodeCursor(scope, next) : undefined,
  };
}
