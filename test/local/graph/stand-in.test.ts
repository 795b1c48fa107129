import { generateKeyPair, SignJWT, decodeJwt } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { LOCAL_CLIENT_ID, LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID } from '../../../local/defaults.js';
import { directoryUser, generateDirectoryUsers, startGraphStandIn, type GraphStandIn, type GraphUser } from '../../../local/graph/stand-in.js';
import { GRAPH_RESOURCE, startIdentityProvider, type IdentityProvider, type TokenOptions } from '../../../local/identity/provider.js';

const PAT = directoryUser(LOCAL_HOME_TENANT_ID, 'pat.obrien@contoso.test', "Pat O'Brien", '2023-05-01T08:00:00Z');
const HOME_USERS: GraphUser[] = [...generateDirectoryUsers(LOCAL_HOME_TENANT_ID, 250), PAT];
const OTHER_USERS = generateDirectoryUsers(LOCAL_OTHER_TENANT_ID, 3, { prefix: 'member', domain: 'fabrikam.test' });

interface GraphResponse {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

interface GraphPage {
  '@odata.context': string;
  '@odata.nextLink'?: string;
  value: Record<string, unknown>[];
}

function expectGraphError(response: GraphResponse, status: number, code: string): void {
  expect(response.status).toBe(status);
  expect(response.body).toEqual({
    error: {
      code,
      message: expect.any(String),
      innerError: {
        date: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/),
        'request-id': expect.stringMatching(/^[0-9a-f-]{36}$/),
        'client-request-id': expect.any(String),
      },
    },
  });
}

describe('local Microsoft Graph stand-in', () => {
  let provider: IdentityProvider;
  let graph: GraphStandIn;
  let token: string;

  /** GET with the On-Behalf-Of token unless another (or null: none) is given. */
  const get = async (pathOrUrl: string, accessToken: string | null = token, headers: Record<string, string> = {}): Promise<GraphResponse> => {
    const response = await fetch(new URL(pathOrUrl, graph.baseUrl), {
      headers: { ...headers, ...(accessToken ? { Authorization: `Bearer ${accessToken}` } : {}) },
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
  };
  const graphToken = (options: Partial<TokenOptions> = {}) =>
    provider.issueToken({
      tenantId: LOCAL_HOME_TENANT_ID,
      kind: 'user',
      username: 'user0005@contoso.test',
      audience: GRAPH_RESOURCE,
      scopes: ['User.Read.All'],
      ...options,
    });

  beforeAll(async () => {
    // A certificate the test workers trust (NODE_EXTRA_CA_CERTS), so fetch reaches this provider.
    provider = await startIdentityProvider({ tenants: [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID], clientId: LOCAL_CLIENT_ID, tls: inject('trustedTls') });
    graph = await startGraphStandIn({
      identityProvider: provider,
      users: { [LOCAL_HOME_TENANT_ID]: HOME_USERS, [LOCAL_OTHER_TENANT_ID]: OTHER_USERS },
    });
    // The token the API will present: On-Behalf-Of a user's token to the API.
    const response = await fetch(`${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/oauth2/v2.0/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
        requested_token_use: 'on_behalf_of',
        client_id: LOCAL_CLIENT_ID,
        client_secret: 'local',
        assertion: await provider.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', username: 'user0007@contoso.test' }),
        scope: `${GRAPH_RESOURCE}/User.Read.All`,
      }),
    });
    token = ((await response.json()) as { access_token: string }).access_token;
  }, 30_000);

  afterAll(async () => {
    await graph?.close();
    await provider?.close();
  });

  beforeEach(() => {
    graph.setFailure(undefined);
  });

  describe('authorization', () => {
    it("requires a bearer token, answering 401 in Graph's shape with its correlation headers", async () => {
      const response = await get('/v1.0/users', null, { 'client-request-id': 'my-request' });
      expectGraphError(response, 401, 'InvalidAuthenticationToken');
      expect(response.body).toMatchObject({ error: { message: 'Access token is empty.', innerError: { 'client-request-id': 'my-request' } } });
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer /);
      expect(response.headers.get('client-request-id')).toBe('my-request');
      expect(response.headers.get('request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });

    it.each([
      ["a token for the API's own audience", () => provider.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user' }), /Invalid audience/],
      ['an expired token', () => graphToken({ expiresInSeconds: -3600 }), /expired/],
      [
        'a token signed by an unknown key',
        async () => {
          const { privateKey } = await generateKeyPair('RS256');
          return new SignJWT(decodeJwt(await graphToken())).setProtectedHeader({ alg: 'RS256', kid: 'unknown' }).sign(privateKey);
        },
        /validation failure/,
      ],
      ['a malformed token', async () => 'not-a-token', /not well formed/],
    ])('rejects %s with 401', async (_case, makeToken, message) => {
      const response = await get('/v1.0/users', await makeToken());
      expectGraphError(response, 401, 'InvalidAuthenticationToken');
      expect((response.body.error as { message: string }).message).toMatch(message);
    });

    it('answers 403 Authorization_RequestDenied to /users without User.Read.All or Directory.Read.All', async () => {
      const userReadOnly = await graphToken({ scopes: ['User.Read'] });
      expectGraphError(await get('/v1.0/users', userReadOnly), 403, 'Authorization_RequestDenied');
      expect((await get('/v1.0/users', await graphToken({ scopes: ['Directory.Read.All'] }))).status).toBe(200);
    });
  });

  describe('GET /v1.0/users', () => {
    it('pages through @odata.nextLink, covering every user exactly once', async () => {
      const pages: GraphPage[] = [];
      let next: string | undefined = '/v1.0/users?$select=id,displayName&$top=120';
      while (next) {
        const response = await get(next);
        expect(response.status).toBe(200);
        const page = response.body as unknown as GraphPage;
        pages.push(page);
        next = page['@odata.nextLink'];
        if (next) expect(next).toMatch(new RegExp(`^${graph.baseUrl}/v1\\.0/users\\?\\$select=id%2CdisplayName&\\$top=120&\\$skiptoken=`));
      }
      expect(pages.map((page) => page.value.length)).toEqual([120, 120, 11]);
      expect(pages[0]!['@odata.context']).toBe(`${graph.baseUrl}/v1.0/$metadata#users(id,displayName)`);
      const ids = pages.flatMap((page) => page.value.map((user) => user.id));
      expect(ids).toEqual(HOME_USERS.map((user) => user.id));
      expect(Object.keys(pages[0]!.value[0]!)).toEqual(['id', 'displayName']);
    });

    it("returns Graph's default properties, 100 users a page, and createdDateTime only when selected", async () => {
      const { body } = await get('/v1.0/users');
      const page = body as unknown as GraphPage;
      expect(page.value).toHaveLength(100);
      expect(page['@odata.context']).toBe(`${graph.baseUrl}/v1.0/$metadata#users`);
      expect(page.value[0]).toEqual({
        businessPhones: [],
        displayName: 'User 0001',
        givenName: 'User',
        jobTitle: null,
        mail: 'user0001@contoso.test',
        mobilePhone: null,
        officeLocation: null,
        preferredLanguage: null,
        surname: '0001',
        userPrincipalName: 'user0001@contoso.test',
        id: HOME_USERS[0]!.id,
      });
      const selected = await get('/v1.0/users?$select=id,createdDateTime&$top=1');
      expect((selected.body as unknown as GraphPage).value).toEqual([{ id: HOME_USERS[0]!.id, createdDateTime: '2024-01-01T00:00:00Z' }]);
    });

    it('filters with startswith on displayName, mail and userPrincipalName joined with or, case-insensitively', async () => {
      const filter = "startswith(displayName,'pat o''b') or startswith(mail,'USER001') or startswith(userPrincipalName,'user0002@')";
      const { status, body } = await get(`/v1.0/users?$filter=${encodeURIComponent(filter)}&$select=displayName`);
      expect(status).toBe(200);
      const names = (body as unknown as GraphPage).value.map((user) => user.displayName);
      expect(names).toEqual(['User 0002', ...Array.from({ length: 10 }, (_, index) => `User 00${10 + index}`), "Pat O'Brien"]);
    });

    it.each([
      ['$top above 999', '$top=1000', 'Request_BadRequest'],
      ['$top of 0', '$top=0', 'Request_BadRequest'],
      ['an unknown $select property', '$select=id,password', 'Request_BadRequest'],
      ['a comparison filter', `$filter=${encodeURIComponent("displayName eq 'x'")}`, 'Request_BadRequest'],
      ['filters joined with and', `$filter=${encodeURIComponent("startswith(displayName,'a') and startswith(mail,'b')")}`, 'Request_BadRequest'],
      ['an unterminated string', `$filter=${encodeURIComponent("startswith(displayName,'it''s)")}`, 'Request_BadRequest'],
      ['startswith on another property', `$filter=${encodeURIComponent("startswith(jobTitle,'x')")}`, 'Request_UnsupportedQuery'],
      ['an unsupported query option', '$orderby=displayName', 'Request_UnsupportedQuery'],
      ['a tampered $skiptoken', '$skiptoken=bm90LWpzb24', 'Request_BadRequest'],
    ])("answers %s with 400 in Graph's shape", async (_case, query, code) => {
      expectGraphError(await get(`/v1.0/users?${query}`), 400, code);
    });

    it('shows each tenant only its own directory', async () => {
      const otherToken = await graphToken({ tenantId: LOCAL_OTHER_TENANT_ID, username: 'member0001@fabrikam.test' });
      const { body } = await get('/v1.0/users?$select=userPrincipalName', otherToken);
      expect((body as unknown as GraphPage).value).toEqual(OTHER_USERS.map(({ userPrincipalName }) => ({ userPrincipalName })));
    });
  });

  describe('the directory and the tokens', () => {
    it("gives generated users the oid the identity provider gives them: the On-Behalf-Of token's user is found by it", async () => {
      const upn = encodeURIComponent("startswith(userPrincipalName,'user0007@')");
      const { status, body } = await get(`/v1.0/users?$filter=${upn}&$select=id,displayName`);
      expect(status).toBe(200);
      expect((body as unknown as GraphPage).value).toEqual([{ id: decodeJwt(token).oid, displayName: 'User 0007' }]);
    });

    it('lists users for app-only tokens with the User.Read.All role', async () => {
      const appToken = await provider.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'app', audience: GRAPH_RESOURCE, roles: ['User.Read.All'] });
      expect((await get('/v1.0/users?$top=1', appToken)).status).toBe(200);
    });
  });

  describe('other requests and failures', () => {
    it("answers unknown resources with 400 and other methods with 405, in Graph's shape", async () => {
      expectGraphError(await get('/v1.0/groups'), 400, 'BadRequest');
      const response = await fetch(`${graph.baseUrl}/v1.0/users`, { method: 'POST', headers: { Authorization: `Bearer ${token}` }, body: '{}' });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('GET');
    });

    it('fails every request as told, until healed', async () => {
      graph.setFailure(503);
      const unavailable = await get('/v1.0/users');
      expectGraphError(unavailable, 503, 'serviceNotAvailable');
      expect(unavailable.headers.get('retry-after')).toBe('1');

      graph.setFailure('drop');
      await expect(get('/v1.0/users')).rejects.toThrow(/fetch failed/);

      graph.setFailure(undefined);
      expect((await get('/v1.0/users')).status).toBe(200);
    });
  });
});
