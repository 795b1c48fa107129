/**
 * The directory listing (shared/graph/directory-users.ts): the tenant's users from Microsoft Graph,
 * read with the caller's own token exchanged through On-Behalf-Of. The real parts run: msal-node
 * against the local identity provider (over HTTPS, its On-Behalf-Of grant), and Graph's HTTP
 * protocol spoken either by the local Graph stand-in (local/graph/stand-in.ts: token checks, `$top`,
 * `$filter`, `@odata.nextLink`) or, for Graph's failures, by a server of this file's own that answers
 * as Graph does (`{ error: { code, message } }`, `Retry-After`). Each failure is also rendered as
 * the API sends it (shared/http/error-mapper.ts), so the contract's error format is what is checked.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { LOCAL_CLIENT_ID as CLIENT_ID, LOCAL_HOME_TENANT_ID as HOME_TENANT, LOCAL_OTHER_TENANT_ID as OTHER_TENANT } from '../../../local/defaults.js';
import { directoryUser, generateDirectoryUsers, startGraphStandIn, type GraphStandIn, type GraphUser } from '../../../local/graph/stand-in.js';
import { GRAPH_RESOURCE, localUserObjectId, startIdentityProvider, type IdentityProvider } from '../../../local/identity/provider.js';
import type { Principal } from '../../../shared/auth/principal.js';
import type { Page } from '../../../shared/data/paging.js';
import { pagingParameters } from '../../../shared/schemas/common.js';
import type { ListUsersQuery, User } from '../../../shared/schemas/users.js';
import { loggedInvocation } from '../../support/logged-invocation.js';
import { startSmallServer, type SmallServer } from '../../support/small-server.js';

// Directory users with what the mapping must handle: a mixed-case mail, no mail at all, a quote in the name.
const PAT: GraphUser = { ...directoryUser(HOME_TENANT, 'pat.obrien@contoso.test', "O'Brien, Pat"), mail: 'Pat.OBrien@Contoso.TEST' };
const NO_MAIL: GraphUser = { ...directoryUser(HOME_TENANT, 'room.4b@contoso.test', 'Room 4B'), mail: null };
const HOME_USERS = [...generateDirectoryUsers(HOME_TENANT, 23), PAT, NO_MAIL];
const OTHER_USERS = generateDirectoryUsers(OTHER_TENANT, 2, { prefix: 'member', domain: 'fabrikam.test' });
const SELECT = 'id,displayName,mail,userPrincipalName';

let identityProvider: IdentityProvider;
let standIn: GraphStandIn;

beforeAll(async () => {
  identityProvider = await startIdentityProvider({ tenants: [HOME_TENANT, OTHER_TENANT], clientId: CLIENT_ID, tls: inject('trustedTls') });
  standIn = await startGraphStandIn({ identityProvider, users: { [HOME_TENANT]: HOME_USERS, [OTHER_TENANT]: OTHER_USERS } });
  Object.assign(process.env, {
    AUTH_TENANT_ID: HOME_TENANT,
    AUTH_CLIENT_ID: CLIENT_ID,
    AUTH_AUTHORITY_HOST: identityProvider.authorityHost,
    AUTH_CLIENT_SECRET: 'local',
    // The stand-ins play the global Graph, whose tokens the identity provider issues.
    GRAPH_RESOURCE,
    CURSOR_SIGNING_KEY: randomBytes(32).toString('base64'),
  });
});
afterAll(async () => {
  await standIn?.close();
  await identityProvider?.close();
});

/** The modules under test, loaded afresh against the Graph at `graphBaseUrl` (settings are read once per process). */
async function directoryAt(graphBaseUrl: string) {
  vi.resetModules();
  process.env.GRAPH_BASE_URL = graphBaseUrl;
  const { listDirectoryUsers } = await import('../../../shared/graph/directory-users.js');
  const { encodeCursor } = await import('../../../shared/data/paging.js');
  const { errorResponse } = await import('../../../shared/http/error-mapper.js');
  /** The page, with the query as the endpoint hands it over (its defaults filled in). */
  const list = (principal: Principal, query: Partial<ListUsersQuery> = {}): Promise<Page<User>> =>
    listDirectoryUsers(principal, { source: 'directory', limit: 50, ...query });
  /** The failure of a listing, as the API answers it. */
  const answerTo = async (principal: Principal, query: Partial<ListUsersQuery> = {}) => {
    const failure = await list(principal, query).then(
      () => expect.unreachable('the listing did not fail'),
      (error: unknown) => error,
    );
    const { invocation, lines } = loggedInvocation('request-1', 'users-list');
    const answer = errorResponse(failure, 'en', invocation);
    const headers = answer.headers as Record<string, string>;
    // What an operator reads of it: the warning's line.
    const logged = lines.filter((line) => line.level === 'warning').map((line) => line.text);
    return { failure, status: answer.status, headers, body: answer.jsonBody as Record<string, unknown>, logged };
  };
  return { list, answerTo, encodeCursor };
}

/** A signed-in user of the identity provider, as authenticate() hands one to the app. */
async function userOf(tenantId: string, username = 'dev@contoso.test'): Promise<Principal> {
  const accessToken = await identityProvider.issueToken({ tenantId, kind: 'user', username, roles: ['LMS.Reader'] });
  return { tenantId, objectId: localUserObjectId(tenantId, username), kind: 'user', roles: ['LMS.Reader'], email: username, displayName: 'Dev', accessToken };
}

const emails = (page: Page<User>) => page.items.map((user) => user.email);

describe('the directory, from the local Graph stand-in', () => {
  let directory: Awaited<ReturnType<typeof directoryAt>>;
  beforeAll(async () => {
    directory = await directoryAt(standIn.baseUrl);
  });

  it("pages through the caller's tenant's directory, each user once, as the API shows a user", async () => {
    const caller = await userOf(HOME_TENANT);
    const seen: User[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await directory.list(caller, { limit: 10, cursor });
      expect(page.items.length).toBeLessThanOrEqual(10);
      seen.push(...page.items);
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(seen.map((user) => user.id)).toEqual(HOME_USERS.map((user) => user.id));
    expect(seen[0]).toEqual({ id: HOME_USERS[0]!.id, email: 'user0001@contoso.test', displayName: 'User 0001', roles: [], createdAt: null, lastSeenAt: null });
    // Mail as the API shows e-mails, in lower case; a user without a mailbox has none (not the sign-in name).
    expect(seen.find((user) => user.id === PAT.id)).toMatchObject({ email: 'pat.obrien@contoso.test', displayName: "O'Brien, Pat" });
    expect(seen.find((user) => user.id === NO_MAIL.id)).toMatchObject({ email: null, displayName: 'Room 4B' });
  });

  it('shows each tenant its own directory only', async () => {
    const page = await directory.list(await userOf(OTHER_TENANT, 'dev@fabrikam.test'));
    expect(emails(page)).toEqual(['member0001@fabrikam.test', 'member0002@fabrikam.test']);
    expect(page.nextCursor).toBeUndefined();
  });

  it('filters by a prefix of the name, the mail or the sign-in name, quotes included, and pages the filtered list', async () => {
    const caller = await userOf(HOME_TENANT);
    const first = await directory.list(caller, { q: 'user001', limit: 6 });
    expect(emails(first)).toEqual(Array.from({ length: 6 }, (_, index) => `user00${10 + index}@contoso.test`));
    const rest = await directory.list(caller, { q: 'user001', limit: 6, cursor: first.nextCursor });
    expect(emails(rest)).toEqual(['user0016@contoso.test', 'user0017@contoso.test', 'user0018@contoso.test', 'user0019@contoso.test']);
    expect(rest.nextCursor).toBeUndefined();
    expect(emails(await directory.list(caller, { q: "o'brien" }))).toEqual(['pat.obrien@contoso.test']);
    expect(emails(await directory.list(caller, { q: 'pat.' }))).toEqual(['pat.obrien@contoso.test']);
    expect(emails(await directory.list(caller, { q: 'room.4' }))).toEqual([null]);
    expect(await directory.list(caller, { q: "'" })).toEqual({ items: [], nextCursor: undefined });
  });

  it("refuses a cursor of another query: another tenant's, or with another q", async () => {
    const home = await userOf(HOME_TENANT);
    const { nextCursor } = await directory.list(home, { limit: 5 });
    const ofOtherQuery = { refusal: 'invalid', messageKey: 'cursorForOtherQuery' };
    await expect(directory.list(home, { limit: 5, q: 'user', cursor: nextCursor })).rejects.toMatchObject(ofOtherQuery);
    const other = await userOf(OTHER_TENANT, 'dev@fabrikam.test');
    await expect(directory.list(other, { limit: 5, cursor: nextCursor })).rejects.toMatchObject(ofOtherQuery);
    const edited = `${nextCursor!.slice(0, -2)}${nextCursor!.endsWith('A') ? 'B' : 'A'}`;
    const answer = await directory.answerTo(home, { limit: 5, cursor: edited });
    expect(answer).toMatchObject({ status: 400, body: { error: 'Bad Request', status: 400 } });
  });

  it('refuses the role filter, which the directory cannot answer, before asking for a token', async () => {
    const before = identityProvider.counts.onBehalfOf;
    const answer = await directory.answerTo(await userOf(HOME_TENANT), { role: 'LMS.Admin' });
    expect(answer).toMatchObject({ status: 400, failure: { messageKey: 'roleFilterNeedsRecordedUsers' }, body: { error: 'Bad Request' } });
    expect(identityProvider.counts.onBehalfOf).toBe(before);
  });

  it("is a 403 naming the missing consent when the user's consent is missing", async () => {
    const answer = await directory.answerTo(await userOf(HOME_TENANT, 'needs-consent-kim@contoso.test'));
    expect(answer).toMatchObject({
      status: 403,
      failure: { messageKey: 'consentRequired' },
      body: { error: 'Forbidden', message: expect.stringContaining('Consent') },
    });
  });

  it('is a 401 handing over the claims challenge when the organisation requires a new sign-in', async () => {
    const answer = await directory.answerTo(await userOf(HOME_TENANT, 'needs-mfa-kim@contoso.test'));
    expect(answer).toMatchObject({ status: 401, body: { error: 'Unauthorized', claims: expect.stringContaining('capolids') } });
    expect(answer.headers['WWW-Authenticate']).toMatch(/^Bearer error="insufficient_claims", claims="[A-Za-z0-9+/]+=*"$/);
  });

  it('is a 403 for an app-only caller, who has no directory permission of its own to lend', async () => {
    const app: Principal = { ...(await userOf(HOME_TENANT)), kind: 'app', email: undefined };
    expect(await directory.answerTo(app)).toMatchObject({ status: 403, failure: { messageKey: 'usersOnly' }, body: { error: 'Forbidden' } });
  });
});

/** What the Graph of this file answers a request, as Graph would: a status, headers and a body (JSON unless a string). */
interface GraphAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

const graphError = (status: number, code: string, headers: Record<string, string> = {}): GraphAnswer => ({
  status,
  headers,
  body: {
    error: { code, message: `${code} (as Graph says it)`, innerError: { date: '2027-03-01T09:00:00', 'request-id': 'r-1', 'client-request-id': 'r-1' } },
  },
});

describe("Graph's protocol and failures, from a Graph of this file's own", () => {
  let graph: SmallServer;
  let directory: Awaited<ReturnType<typeof directoryAt>>;
  /** What Graph answers next; by default an empty page. */
  let answer: (request: IncomingMessage) => GraphAnswer | 'drop' | 'stall' | 'cut';
  let requests: IncomingMessage[] = [];

  function respond(request: IncomingMessage, response: ServerResponse) {
    requests.push(request);
    const reply = answer(request);
    if (reply === 'drop') return void request.socket.destroy();
    // The headers, then nothing more: the body never comes (or is cut off half-way).
    if (reply === 'stall' || reply === 'cut') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"value":[');
      if (reply === 'cut') setImmediate(() => request.socket.destroy());
      return;
    }
    const { status, headers = {}, body } = reply;
    response.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/html' : 'application/json;odata.metadata=minimal', ...headers });
    response.end(typeof body === 'string' ? body : JSON.stringify(body));
  }

  beforeAll(async () => {
    graph = await startSmallServer((request, response) => respond(request, response));
    directory = await directoryAt(graph.url);
  });
  afterAll(() => graph?.close());
  beforeEach(() => {
    requests = [];
    answer = () => ({ status: 200, body: { '@odata.context': `${graph.url}/v1.0/$metadata#users(${SELECT})`, value: [] } });
  });

  it("asks Graph's users endpoint with the caller's delegated token, naming the fields and the page size, and follows nextLink as given", async () => {
    const caller = await userOf(HOME_TENANT);
    const nextLink = `${graph.url}/v1.0/users?$select=${SELECT}&$top=3&$skiptoken=RFNwdAIAAQAAAD8%3d%2b%2F`;
    answer = () => ({ status: 200, body: { value: [PAT], '@odata.nextLink': nextLink } });
    const first = await directory.list(caller, { limit: 3 });
    expect(requests).toHaveLength(1);
    const [request] = requests as [IncomingMessage];
    expect(request.method).toBe('GET');
    const url = new URL(request.url!, graph.url);
    expect(url.pathname).toBe('/v1.0/users');
    expect([...url.searchParams]).toEqual([
      ['$select', SELECT],
      ['$top', '3'],
    ]);
    expect(request.headers.accept).toBe('application/json');
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    expect(token).not.toBe(caller.accessToken);
    expect(decodeJwt(token!)).toMatchObject({ aud: GRAPH_RESOURCE, oid: caller.objectId, tid: HOME_TENANT, scp: expect.stringContaining('User.Read.All') });
    expect(first.items).toEqual([{ id: PAT.id, email: 'pat.obrien@contoso.test', displayName: "O'Brien, Pat", roles: [], createdAt: null, lastSeenAt: null }]);

    answer = () => ({ status: 200, body: { value: [] } });
    const last = await directory.list(caller, { limit: 3, cursor: first.nextCursor });
    expect(`${graph.url}${requests[1]!.url}`).toBe(nextLink);
    expect(last).toEqual({ items: [], nextCursor: undefined });
  });

  it('hands out a cursor the cursor parameter takes, however the longest q is spelled, and follows its nextLink as given', async () => {
    const caller = await userOf(HOME_TENANT);
    const randomCharacters = (count: number, from: number, span: number) =>
      String.fromCodePoint(...Array.from({ length: count }, () => from + Math.floor(Math.random() * span)));
    // Kana, random CJK ideographs, and ideographs outside the BMP (two UTF-16 units each): 9 or 12 characters each, percent-encoded, three times.
    for (const q of ['あいうえお'.repeat(40), randomCharacters(200, 0x4e00, 0x5200), randomCharacters(100, 0x20000, 0xa6d0)]) {
      // Graph's next link: the same query, and a skip token that does not compress.
      let nextLink = '';
      answer = (request) => {
        nextLink = `${graph.url}${request.url}&$skiptoken=${randomBytes(300).toString('base64url')}`;
        return { status: 200, body: { value: [PAT], '@odata.nextLink': nextLink } };
      };
      const first = await directory.list(caller, { q, limit: 1 });
      expect(pagingParameters.cursor.safeParse(first.nextCursor).success, `a cursor of ${first.nextCursor?.length} characters`).toBe(true);
      const followed = nextLink;
      await directory.list(caller, { q, limit: 1, cursor: first.nextCursor });
      expect(`${graph.url}${requests.at(-1)!.url}`).toBe(followed);
    }
  });

  it("sends q as startswith clauses on the name, the mail and the sign-in name, its quotes doubled as OData's", async () => {
    await directory.list(await userOf(HOME_TENANT), { q: "o'b", limit: 7 });
    const url = new URL(requests[0]!.url!, graph.url);
    expect(url.searchParams.get('$filter')).toBe("startswith(displayName,'o''b') or startswith(mail,'o''b') or startswith(userPrincipalName,'o''b')");
    expect(url.searchParams.get('$top')).toBe('7');
  });

  it("refuses a cursor, even one signed with the server's key, that would send the token anywhere but Graph's users endpoint", async () => {
    const caller = await userOf(HOME_TENANT);
    const scope = JSON.stringify(['directory-users', HOME_TENANT, undefined]);
    const elsewhere = await startSmallServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"value":[]}'));
    try {
      for (const target of [
        `${elsewhere.url}/v1.0/users?$top=1`,
        `${graph.url}/v1.0/users/${PAT.id}?$select=${SELECT}`,
        `${graph.url}/v1.0/usersX?$top=1`,
        `${graph.url}/beta/users?$top=1`,
        `${graph.url}0/v1.0/users?$top=1`,
      ]) {
        const cursor = directory.encodeCursor(scope, target);
        await expect(directory.list(caller, { cursor }), target).rejects.toMatchObject({ status: 400, messageKey: 'invalidCursor' });
      }
      expect(elsewhere.hits).toEqual([]);
      expect(requests).toEqual([]);
      // The same cursor to Graph's users endpoint is followed.
      await directory.list(caller, { cursor: directory.encodeCursor(scope, `${graph.url}/v1.0/users?$top=1&$skiptoken=x`) });
      expect(requests.map((request) => request.url)).toEqual(['/v1.0/users?$top=1&$skiptoken=x']);
    } finally {
      await elsewhere.close();
    }
  });

  it.each<[string, GraphAnswer, string]>([
    ['a 429 with Retry-After', graphError(429, 'TooManyRequests', { 'Retry-After': '7' }), '7'],
    ['a 503 with Retry-After', graphError(503, 'serviceNotAvailable', { 'Retry-After': '30' }), '30'],
    ['a 429 without Retry-After', graphError(429, 'TooManyRequests'), '5'],
    ['a 503 whose Retry-After is a date', graphError(503, 'serviceNotAvailable', { 'Retry-After': 'Wed, 21 Oct 2026 07:28:00 GMT' }), '5'],
    ['a 503 whose Retry-After is not whole seconds', graphError(503, 'serviceNotAvailable', { 'Retry-After': '1.5' }), '5'],
    ['a 503 whose Retry-After hides a header', graphError(503, 'serviceNotAvailable', { 'Retry-After': '7, 8' }), '5'],
    ['a 500', graphError(500, 'generalException'), '5'],
    ['a 504', graphError(504, 'UnknownError', { 'Retry-After': '2' }), '2'],
  ])('is a 503 with Retry-After when Graph is busy or failing: %s', async (_, graphAnswer, retryAfter) => {
    answer = () => graphAnswer;
    const response = await directory.answerTo(await userOf(HOME_TENANT));
    expect(response).toMatchObject({ status: 503, failure: { messageKey: 'directoryUnavailable' }, body: { error: 'Service Unavailable', status: 503 } });
    expect(response.headers['Retry-After']).toBe(retryAfter);
  });

  it('is a 403 naming the missing permission when Graph refuses the caller the directory', async () => {
    answer = () => graphError(403, 'Authorization_RequestDenied');
    const response = await directory.answerTo(await userOf(HOME_TENANT));
    expect(response).toMatchObject({ status: 403, failure: { messageKey: 'directoryAccessDenied' }, body: { error: 'Forbidden' } });
    expect(response.body.message).toContain('User.Read.All');
  });

  it('is a 400, never a 500, when Graph refuses the query it was sent', async () => {
    answer = () => graphError(400, 'Request_UnsupportedQuery');
    const response = await directory.answerTo(await userOf(HOME_TENANT), { q: 'x' });
    expect(response).toMatchObject({ status: 400, failure: { messageKey: 'directoryQueryRefused' }, body: { error: 'Bad Request', status: 400 } });
  });

  it.each<[string, GraphAnswer]>([
    ['refuses the exchanged token (401)', graphError(401, 'InvalidAuthenticationToken', { 'WWW-Authenticate': 'Bearer realm=""' })],
    ['has no such endpoint (404)', graphError(404, 'Request_ResourceNotFound')],
    ['answers a status Graph never sends (418)', { status: 418, body: 'teapot' }],
  ])('is a 502 naming the status when Graph %s: the failure is upstream, not the caller’s', async (_, graphAnswer) => {
    answer = () => graphAnswer;
    const response = await directory.answerTo(await userOf(HOME_TENANT));
    expect(response).toMatchObject({
      status: 502,
      failure: { messageKey: 'directoryFailed', params: { status: graphAnswer.status } },
      body: { error: 'Bad Gateway', status: 502, message: expect.stringContaining(String(graphAnswer.status)) },
    });
    expect(response.headers['WWW-Authenticate']).toBeUndefined();
  });

  it('is a 502 when Graph cannot be reached, drops the connection or redirects (a redirect is not followed)', async () => {
    const caller = await userOf(HOME_TENANT);
    const elsewhere = await startSmallServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"value":[]}'));
    try {
      answer = () => ({ status: 302, headers: { location: `${elsewhere.url}/v1.0/users` } });
      expect(await directory.answerTo(caller)).toMatchObject({ status: 502, failure: { messageKey: 'directoryUnavailable' }, body: { error: 'Bad Gateway' } });
      expect(elsewhere.hits).toEqual([]);
    } finally {
      await elsewhere.close();
    }
    answer = () => 'drop';
    const dropped = await directory.answerTo(caller);
    expect(dropped).toMatchObject({ status: 502, failure: { messageKey: 'directoryUnavailable' }, body: { error: 'Bad Gateway' } });
    // The log says why, for the operator: the failure beneath.
    expect(dropped.logged).toEqual([expect.stringMatching(/^directoryUnavailable \(request request-1\): TypeError: fetch failed; caused by SocketError/)]);
    const down = await startSmallServer(() => undefined);
    await down.close();
    const unreachable = await directoryAt(down.url);
    expect(await unreachable.answerTo(caller)).toMatchObject({ status: 502, failure: { messageKey: 'directoryUnavailable' }, body: { error: 'Bad Gateway' } });
  });

  it.each<[string, ReturnType<typeof answer>, RegExp | undefined]>([
    ['cuts the body off', 'cut', /\): TypeError: terminated; caused by SocketError/],
    ['answers a page that is not JSON', { status: 200, body: '<html>Sign in to continue</html>' }, /\): SyntaxError: .* is not valid JSON/],
    ['answers JSON that is not a page', { status: 200, body: { error: null } }, undefined],
    ['answers null', { status: 200, body: null }, undefined],
  ])('is a 502, never a 500, when Graph %s', async (_, graphAnswer, logged) => {
    answer = () => graphAnswer;
    const response = await directory.answerTo(await userOf(HOME_TENANT));
    expect(response).toMatchObject({ status: 502, failure: { messageKey: 'directoryUnavailable' }, body: { error: 'Bad Gateway', status: 502 } });
    // The log says why, where there is a failure beneath.
    if (logged) expect(response.logged).toEqual([expect.stringMatching(logged)]);
  });

  // Graph's answer, its body included, must come within 10 seconds: this test waits them out.
  it('is a 502 when Graph sends its headers and then nothing', async () => {
    answer = () => 'stall';
    const response = await directory.answerTo(await userOf(HOME_TENANT));
    expect(response).toMatchObject({ status: 502, failure: { messageKey: 'directoryUnavailable' }, body: { error: 'Bad Gateway', status: 502 } });
    expect(response.logged).toEqual([expect.stringContaining('): TimeoutError')]);
  });
});
