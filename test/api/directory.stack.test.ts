import { decodeJwt } from 'jose';
import { Agent, fetch as fetchTrusting } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { generateDirectoryUsers, startGraphStandIn, type GraphStandIn } from '../../local/graph/stand-in.js';
import { startHostProcess, startStack } from '../../local/stack.js';
import { api, apiAt, CLIENT_ID, HOME_TENANT, nextPath, stack, stackAppSettings, token } from '../support/stack.js';

const reader = (username = 'tester@contoso.test') => token({ roles: ['LMS.Reader'], username });

describe('GET /api/users?source=directory', () => {
  it("pages through the tenant's directory from Microsoft Graph, each user once", async () => {
    const seen: string[] = [];
    let path: string | undefined = '/users?source=directory&limit=10';
    let pages = 0;
    while (path) {
      const page = await api('GET', path, { token: await reader() });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(10);
      for (const user of page.body)
        expect(user).toEqual({
          id: expect.any(String),
          email: expect.any(String),
          displayName: expect.any(String),
          roles: [],
          createdAt: null,
          lastSeenAt: null,
        });
      seen.push(...page.body.map((user: { email: string }) => user.email));
      path = nextPath(page.headers.get('link'));
      pages++;
    }
    expect(pages).toBe(4);
    expect(new Set(seen).size).toBe(31);
    expect(seen).toContain('dev@contoso.test');
  });

  it('filters by name or e-mail prefix, quotes included', async () => {
    const response = await api('GET', '/users?source=directory&q=USER000', { token: await reader() });
    expect(response.status).toBe(200);
    expect(response.body.map((user: { email: string }) => user.email).sort()).toEqual(
      Array.from({ length: 9 }, (_, index) => `user000${index + 1}@contoso.test`),
    );
    const quoted = await api('GET', `/users?source=directory&q=${encodeURIComponent("o'brien")}`, { token: await reader() });
    expect(quoted.status).toBe(200);
    expect(quoted.body).toEqual([]);
  });

  it('refuses the role filter, which the directory cannot answer', async () => {
    const response = await api('GET', '/users?source=directory&role=LMS.Admin', { token: await reader() });
    expect(response.status).toBe(400);
  });

  it('refuses a cursor that would send the API elsewhere', async () => {
    const forged = Buffer.from(JSON.stringify({ v: 1, c: 'https://evil.example/v1.0/users?x', f: 'x' })).toString('base64url');
    expect((await api('GET', `/users?source=directory&cursor=${forged}`, { token: await reader() })).status).toBe(400);
  });

  it('is a 403 naming the missing consent when the user has not consented', async () => {
    const response = await api('GET', '/users?source=directory', { token: await reader('needs-consent-kim@contoso.test') });
    expect(response.status).toBe(403);
    expect(response.body).toMatchObject({ error: 'Forbidden', message: expect.stringContaining('Consent') });
  });

  it('is a 401 carrying the claims challenge when MFA is required', async () => {
    const response = await api('GET', '/users?source=directory', { token: await reader('needs-mfa-kim@contoso.test') });
    expect(response.status).toBe(401);
    const challenge = response.headers.get('www-authenticate')!;
    expect(challenge).toMatch(/^Bearer error="insufficient_claims", claims="[A-Za-z0-9+/=]+"$/);
    const claims = JSON.parse(Buffer.from(/claims="([^"]+)"/.exec(challenge)![1]!, 'base64').toString());
    expect(claims.access_token.capolids.essential).toBe(true);
    expect(response.body.claims).toBe(JSON.stringify(claims));
  });

  it('is a 403 for an app-only token, which cannot act on behalf of anyone', async () => {
    const response = await api('GET', '/users?source=directory', { token: await token({ kind: 'app', roles: ['LMS.Reader'] }) });
    expect(response.status).toBe(403);
  });
});

describe("a Teams tab's single sign-on token, for an App ID URI of its own", () => {
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  // A v1 registration puts the App ID URI the tab asked for in aud; AUTH_AUDIENCES names it (docs/add-ins.md).
  it('lists the directory through On-Behalf-Of on a stack whose AUTH_AUDIENCES names the URI, as Entra exchanges it', async () => {
    const appIdUri = `api://tab.contoso.test/${CLIENT_ID}`;
    const { COSMOS_CONNECTION, COSMOS_DATABASE, CURSOR_SIGNING_KEY, WEBHOOKS_QUEUE_NAME, WEBHOOKS_SWEEP_SCHEDULE } = stackAppSettings;
    const own = await startStack({
      apiPort: 0,
      identityProviderPort: 0,
      settings: {
        AUTH_AUDIENCES: appIdUri,
        ...{ COSMOS_CONNECTION, COSMOS_DATABASE, CURSOR_SIGNING_KEY, WEBHOOKS_QUEUE_NAME, WEBHOOKS_SWEEP_SCHEDULE },
        'AzureWebJobs.changes-relay.Disabled': 'true',
        AzureWebJobsStorage: stack.storageConnectionString,
        NODE_EXTRA_CA_CERTS: stack.caCertPath,
      },
      hostOutput: () => {},
    });
    stops.push(() => own.stop());
    const dispatcher = new Agent({ connect: { ca: own.tls.cert } });
    stops.push(() => dispatcher.close());
    const issued = await fetchTrusting(`${own.identityProvider!.authorityHost}/${HOME_TENANT}/oauth2/v2.0/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'password',
        client_id: CLIENT_ID,
        username: 'dev@contoso.test',
        password: 'p',
        scope: `${appIdUri}/access_as_user`,
        roles: 'LMS.Reader',
      }),
      dispatcher,
    });
    const body = (await issued.json()) as { access_token: string };
    expect(issued.status, JSON.stringify(body)).toBe(200);
    const ssoToken = body.access_token;
    expect(decodeJwt(ssoToken).aud).toBe(appIdUri);

    const response = await apiAt(own.apiBaseUrl)('GET', '/users?source=directory&limit=1', { token: ssoToken });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body).toHaveLength(1);
  }, 60_000);
});

describe('when Microsoft Graph fails', () => {
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  /** The app with its own Graph address, so that this test can break Graph without disturbing others. */
  async function hostWithGraph(graphBaseUrl: string) {
    const host = await startHostProcess({
      port: 0,
      environment: {
        ...stackAppSettings,
        AUTH_CLIENT_SECRET: 'local',
        GRAPH_BASE_URL: graphBaseUrl,
      },
      extraCaCerts: stack.caCertPath,
    });
    stops.push(host.stop);
    return async () => fetch(`http://127.0.0.1:${host.port}/api/users?source=directory`, { headers: { authorization: `Bearer ${await reader()}` } });
  }

  /** A Graph stand-in of the test's own, with three users in the home tenant, and the app using it. */
  async function hostWithOwnGraph() {
    const graph: GraphStandIn = await startGraphStandIn({ identityProvider: stack, users: { [HOME_TENANT]: generateDirectoryUsers(HOME_TENANT, 3) } });
    stops.push(() => graph.close());
    return { graph, listDirectory: await hostWithGraph(graph.baseUrl) };
  }

  it('is a 503 with Retry-After while Graph is busy, and works again when it recovers', async () => {
    const { graph, listDirectory } = await hostWithOwnGraph();
    graph.setFailure(503);
    const busy = await listDirectory();
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('1');
    expect(((await busy.json()) as { error: string }).error).toBe('Service Unavailable');
    graph.setFailure(undefined);
    const recovered = await listDirectory();
    expect(recovered.status).toBe(200);
    expect(await recovered.json()).toHaveLength(3);
  });

  it('is a 400, never a 500, when Graph refuses the query it was sent', async () => {
    const { graph, listDirectory } = await hostWithOwnGraph();
    graph.setFailure(400);
    const refused = await listDirectory();
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe('Bad Request');
  });

  it('is a 502 when Graph cannot be reached at all', async () => {
    const listDirectory = await hostWithGraph('http://127.0.0.1:1');
    const response = await listDirectory();
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: string }).error).toBe('Bad Gateway');
  });
});
