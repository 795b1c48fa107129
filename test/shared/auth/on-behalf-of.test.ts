/**
 * On-Behalf-Of through the real msal-node, against a token endpoint of this file's own over HTTPS
 * (msal-node refuses plain http): Entra's metadata document and its token endpoint protocol, with the
 * answer each case needs (a token of a chosen lifetime, or one of Entra's errors), and every request
 * recorded so the client's credential can be checked as Entra would.
 */
import { createHash, randomUUID, X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compactVerify, decodeJwt, decodeProtectedHeader, importX509 } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { openIdConfiguration, startIdentityProvider, type IdentityProvider } from '../../../local/identity/provider.js';
import type { Principal } from '../../../shared/auth/principal.js';
import { ON_BEHALF_OF_CREDENTIALS } from '../../../shared/settings/read.js';
import { onAppService } from '../../support/app-service.js';
import { startSmallServer, type SmallServer } from '../../support/small-server.js';

const TENANT = '6f1c2a4e-3b5d-4c7e-9a10-1b2c3d4e5f60';
const GUEST_TENANT = '9e8d7c6b-5a49-4382-8716-0f1e2d3c4b5a';
const CLIENT_ID = 'c0ffee00-0000-4000-8000-000000000001';
const GRAPH_SCOPES = ['https://graph.microsoft.com/User.Read.All'];

type TokenAnswer = { status: number; body: Record<string, unknown> };

let server: SmallServer;
/** The token endpoint's requests, as forms. */
let forms: { tenant: string; form: URLSearchParams }[] = [];
/** What the token endpoint answers next; by default a token valid for an hour. */
let answerToken: (form: URLSearchParams) => TokenAnswer;
let issued = 0;

const token = (expiresIn = 3600): TokenAnswer => ({
  status: 200,
  body: { token_type: 'Bearer', scope: GRAPH_SCOPES.join(' '), expires_in: expiresIn, ext_expires_in: expiresIn, access_token: `graph-token-${++issued}` },
});
const entraError = (status: number, error: string, extra: Record<string, unknown> = {}): TokenAnswer => ({
  status,
  body: { error, error_description: `AADSTS00000: ${error}`, error_codes: [0], timestamp: new Date().toISOString(), ...extra },
});

function send(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

function answer(request: IncomingMessage, response: ServerResponse) {
  const url = new URL(request.url ?? '/', server.url);
  const [, tenant, ...rest] = url.pathname.split('/');
  const path = rest.join('/');
  if (request.method === 'GET' && path === 'v2.0/.well-known/openid-configuration') return send(response, 200, openIdConfiguration(server.url, tenant!, 2));
  if (request.method === 'POST' && path === 'oauth2/v2.0/token') {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      const form = new URLSearchParams(text);
      forms.push({ tenant: tenant!, form });
      const { status, body } = answerToken(form);
      send(response, status, body);
    });
    return;
  }
  send(response, 404, { error: 'not_found' });
}

beforeAll(async () => {
  server = await startSmallServer(answer, { https: true });
});
afterAll(() => server.close());
beforeEach(() => {
  forms = [];
  answerToken = () => token();
});

/** The module under test, loaded afresh with these settings (settings and the client are made once per process). */
async function onBehalfOfWith(credential: Record<string, string> = { AUTH_CLIENT_SECRET: 'client-secret' }, authorityHost = server.url) {
  vi.resetModules();
  for (const name of ON_BEHALF_OF_CREDENTIALS) delete process.env[name];
  Object.assign(process.env, { AUTH_TENANT_ID: TENANT, AUTH_CLIENT_ID: CLIENT_ID, AUTH_AUTHORITY_HOST: authorityHost, ...credential });
  return (await import('../../../shared/auth/on-behalf-of.js')).onBehalfOf;
}

function caller(overrides: Partial<Principal> = {}): Principal {
  return {
    tenantId: TENANT,
    objectId: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
    kind: 'user',
    roles: ['LMS.Reader'],
    email: 'kim@contoso.test',
    displayName: 'Kim',
    accessToken: 'caller.access.token',
    ...overrides,
  };
}

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable('no failure'),
    (error: unknown) => error,
  );

describe('On-Behalf-Of', () => {
  it("sends the caller's token as the assertion, with the client's secret, to the caller's tenant", async () => {
    const onBehalfOf = await onBehalfOfWith();
    expect(await onBehalfOf(caller({ tenantId: GUEST_TENANT }), GRAPH_SCOPES)).toBe(`graph-token-${issued}`);
    expect(forms).toHaveLength(1);
    const [{ tenant, form }] = forms as [(typeof forms)[0]];
    expect(tenant).toBe(GUEST_TENANT);
    expect(form.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer');
    expect(form.get('requested_token_use')).toBe('on_behalf_of');
    expect(form.get('assertion')).toBe('caller.access.token');
    expect(form.get('client_id')).toBe(CLIENT_ID);
    expect(form.get('client_secret')).toBe('client-secret');
    expect(form.get('scope')?.split(' ')).toContain(GRAPH_SCOPES[0]);
  });

  it('reuses a token while it is valid for more than a minute, per caller token, tenant and scopes', async () => {
    const onBehalfOf = await onBehalfOfWith();
    const first = await onBehalfOf(caller(), GRAPH_SCOPES);
    expect(await onBehalfOf(caller(), GRAPH_SCOPES)).toBe(first);
    expect(forms).toHaveLength(1);
    expect(await onBehalfOf(caller({ accessToken: 'another.caller.token' }), GRAPH_SCOPES)).not.toBe(first);
    expect(await onBehalfOf(caller({ tenantId: GUEST_TENANT }), GRAPH_SCOPES)).not.toBe(first);
    expect(await onBehalfOf(caller(), [...GRAPH_SCOPES, 'https://graph.microsoft.com/Group.Read.All'])).not.toBe(first);
    expect(forms).toHaveLength(4);
    // Each part of the key is its own: tenant "ab" with token "cd" is not tenant "abc" with token "d".
    forms = [];
    await onBehalfOf(caller({ tenantId: 'ab', accessToken: 'cd' }), ['e']);
    await onBehalfOf(caller({ tenantId: 'abc', accessToken: 'd' }), ['e']);
    await onBehalfOf(caller({ tenantId: 'ab', accessToken: 'cde' }), ['f']);
    await onBehalfOf(caller({ tenantId: 'ab', accessToken: 'cd' }), ['ef']);
    await onBehalfOf(caller({ tenantId: 'ab', accessToken: 'cd' }), ['e', 'f']);
    expect(forms).toHaveLength(5);
  });

  it('asks again for a token that expires within a minute', async () => {
    const onBehalfOf = await onBehalfOfWith();
    answerToken = () => token(50);
    const first = await onBehalfOf(caller(), GRAPH_SCOPES);
    answerToken = () => token(3600);
    const second = await onBehalfOf(caller(), GRAPH_SCOPES);
    expect(second).not.toBe(first);
    expect(await onBehalfOf(caller(), GRAPH_SCOPES)).toBe(second);
    expect(forms).toHaveLength(2);
  });

  it('hands out no token with a minute or less left: at exactly a minute, it asks again', async () => {
    const onBehalfOf = await onBehalfOfWith();
    // Only the clock: msal-node dates a token by its own clock, in whole seconds, as Entra does.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.UTC(2026, 11, 6, 12) });
    try {
      const first = await onBehalfOf(caller(), GRAPH_SCOPES);
      vi.setSystemTime(Date.UTC(2026, 11, 6, 13) - 60_001);
      expect(await onBehalfOf(caller(), GRAPH_SCOPES)).toBe(first);
      vi.setSystemTime(Date.UTC(2026, 11, 6, 13) - 60_000);
      expect(await onBehalfOf(caller(), GRAPH_SCOPES)).not.toBe(first);
      expect(forms).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps no token in msal-node: every exchange reaches the token endpoint', async () => {
    const onBehalfOf = await onBehalfOfWith();
    answerToken = () => token(50);
    await onBehalfOf(caller(), GRAPH_SCOPES);
    await onBehalfOf(caller(), GRAPH_SCOPES);
    expect(forms).toHaveLength(2);
  });

  it('refuses app-only callers with a 403 before asking anyone', async () => {
    const onBehalfOf = await onBehalfOfWith();
    expect(await failureOf(onBehalfOf(caller({ kind: 'app' }), GRAPH_SCOPES))).toMatchObject({ status: 403, messageKey: 'usersOnly' });
    expect(forms).toHaveLength(0);
  });

  it('answers missing consent with a 403', async () => {
    const onBehalfOf = await onBehalfOfWith();
    answerToken = () => entraError(400, 'invalid_grant', { suberror: 'consent_required' });
    expect(await failureOf(onBehalfOf(caller(), GRAPH_SCOPES))).toMatchObject({ status: 403, messageKey: 'consentRequired' });
    answerToken = () => entraError(400, 'consent_required');
    expect(await failureOf(onBehalfOf(caller(), GRAPH_SCOPES))).toMatchObject({ status: 403, messageKey: 'consentRequired' });
  });

  it("answers Conditional Access's challenge with a 401 that hands its claims to the client", async () => {
    const onBehalfOf = await onBehalfOfWith();
    const claims = '{"access_token":{"capolids":{"essential":true,"values":["p1"]}}}';
    answerToken = () => entraError(400, 'interaction_required', { suberror: 'basic_action', claims });
    const failure = await failureOf(onBehalfOf(caller(), GRAPH_SCOPES));
    expect(failure).toMatchObject({
      status: 401,
      messageKey: 'interactionRequired',
      options: {
        headers: { 'WWW-Authenticate': `Bearer error="insufficient_claims", claims="${Buffer.from(claims).toString('base64')}"` },
        extra: { claims },
      },
    });
    answerToken = () => entraError(400, 'interaction_required');
    const withoutClaims = await failureOf(onBehalfOf(caller(), GRAPH_SCOPES));
    expect(withoutClaims).toMatchObject({
      status: 401,
      messageKey: 'interactionRequired',
      options: { headers: { 'WWW-Authenticate': 'Bearer error="insufficient_claims"' } },
    });
    expect((withoutClaims as { options: object }).options).not.toHaveProperty('extra');
  });

  it('answers any other interaction msal-node says is needed with the same 401', async () => {
    const onBehalfOf = await onBehalfOfWith();
    for (const answer of [entraError(400, 'login_required'), entraError(400, 'invalid_grant', { suberror: 'basic_action' })]) {
      answerToken = () => answer;
      expect(await failureOf(onBehalfOf(caller(), GRAPH_SCOPES))).toMatchObject({ status: 401, messageKey: 'interactionRequired' });
    }
  });

  it('answers an assertion the identity provider refuses with a 401 invalid_token', async () => {
    const onBehalfOf = await onBehalfOfWith();
    for (const error of ['invalid_grant', 'invalid_request']) {
      answerToken = () => entraError(400, error);
      expect(await failureOf(onBehalfOf(caller(), GRAPH_SCOPES))).toMatchObject({
        status: 401,
        messageKey: 'tokenInvalid',
        options: { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } },
      });
    }
  });

  it('reports an identity provider that is busy or failing as a dependency failure (503)', async () => {
    const onBehalfOf = await onBehalfOfWith();
    for (const error of ['temporarily_unavailable', 'server_error']) {
      answerToken = () => entraError(400, error);
      expect(await failureOf(onBehalfOf(caller(), GRAPH_SCOPES))).toMatchObject({ name: 'DependencyUnavailableError', dependency: 'identityProvider' });
    }
    answerToken = () => ({ status: 200, body: { token_type: 'Bearer', expires_in: 3600 } });
    expect(await failureOf(onBehalfOf(caller(), GRAPH_SCOPES))).toMatchObject({ name: 'DependencyUnavailableError', dependency: 'identityProvider' });
  });

  it('reports an unreachable identity provider as a dependency failure (503)', async () => {
    const down = await startSmallServer(() => undefined, { https: true });
    await down.close();
    const onBehalfOf = await onBehalfOfWith(undefined, down.url);
    expect(await failureOf(onBehalfOf(caller(), GRAPH_SCOPES))).toMatchObject({ name: 'DependencyUnavailableError', dependency: 'identityProvider' });
  });

  it('reports an identity provider whose metadata fails as a dependency failure (503)', async () => {
    const broken = await startSmallServer((_request, response) => response.writeHead(500).end(), { https: true });
    try {
      const onBehalfOf = await onBehalfOfWith(undefined, broken.url);
      expect(await failureOf(onBehalfOf(caller(), GRAPH_SCOPES))).toMatchObject({ name: 'DependencyUnavailableError', dependency: 'identityProvider' });
    } finally {
      await broken.close();
    }
  });

  it("passes on the app's own misconfiguration (invalid_client) as the error it is", async () => {
    const onBehalfOf = await onBehalfOfWith();
    answerToken = () => entraError(401, 'invalid_client');
    const failure = await failureOf(onBehalfOf(caller(), GRAPH_SCOPES));
    expect(failure).toBeInstanceOf(Error);
    expect(failure).toMatchObject({ name: 'ServerError', errorCode: 'invalid_client' });
  });
});

describe('On-Behalf-Of with a managed identity', () => {
  const SYSTEM_ASSIGNED = randomUUID();
  const USER_ASSIGNED = randomUUID();
  let identities: IdentityProvider;
  beforeAll(async () => {
    identities = await startIdentityProvider({
      tenants: [TENANT],
      clientId: CLIENT_ID,
      tls: inject('trustedTls'),
      managedIdentities: { systemAssigned: SYSTEM_ASSIGNED, userAssigned: [USER_ASSIGNED] },
    });
  });
  afterAll(() => identities?.close());
  afterEach(() => vi.unstubAllEnvs());

  it("sends as its client assertion the token of the managed identity the setting names, for Entra's token exchange audience", async () => {
    onAppService(identities);
    const onBehalfOf = await onBehalfOfWith({ AUTH_MANAGED_IDENTITY_CLIENT_ID: USER_ASSIGNED });
    expect(await onBehalfOf(caller(), GRAPH_SCOPES)).toBe(`graph-token-${issued}`);
    const form = forms[0]!.form;
    expect(form.get('client_secret')).toBeNull();
    expect(form.get('client_assertion_type')).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    expect(decodeJwt(form.get('client_assertion')!)).toMatchObject({ azp: USER_ASSIGNED, aud: 'api://AzureADTokenExchange' });
    expect(identities.managedIdentityTokens).toEqual([{ clientId: USER_ASSIGNED, resource: 'api://AzureADTokenExchange' }]);
  });
});

describe('On-Behalf-Of with a certificate', () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'obo-certificate-'));
  });
  afterAll(() => rm(folder, { recursive: true, force: true }));

  // Any certificate and its key do: the one this run's stand-ins serve is at hand.
  const { cert, key } = inject('trustedTls');

  it('signs its client assertion with the key, naming the certificate by its SHA-256 thumbprint and sending the chain', async () => {
    const certificatePath = join(folder, 'credential.pem');
    await writeFile(certificatePath, `${key}\n${cert}\n${cert}`);
    const onBehalfOf = await onBehalfOfWith({ AUTH_CLIENT_CERTIFICATE_PATH: certificatePath });
    await onBehalfOf(caller(), GRAPH_SCOPES);
    const form = forms[0]!.form;
    expect(form.get('client_secret')).toBeNull();
    expect(form.get('client_assertion_type')).toBe('urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    const assertion = form.get('client_assertion')!;
    const certificate = new X509Certificate(cert);
    const header = decodeProtectedHeader(assertion);
    expect(header['x5t#S256']).toBe(createHash('sha256').update(certificate.raw).digest('base64url'));
    const der = certificate.raw.toString('base64');
    expect(header.x5c).toEqual([der, der]);
    await expect(compactVerify(assertion, await importX509(cert, 'PS256'))).resolves.toBeDefined();
  });

  it('refuses a file that holds no certificate', async () => {
    const certificatePath = join(folder, 'key-only.pem');
    await writeFile(certificatePath, key);
    const onBehalfOf = await onBehalfOfWith({ AUTH_CLIENT_CERTIFICATE_PATH: certificatePath });
    expect(await failureOf(onBehalfOf(caller(), GRAPH_SCOPES))).toMatchObject({ message: `${certificatePath} holds no certificate` });
  });
});
