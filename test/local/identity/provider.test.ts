import { execFile } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  createLocalJWKSet,
  decodeJwt,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type JSONWebKeySet,
  type JWK,
  type JWTHeaderParameters,
  type JWTPayload,
} from 'jose';
import { generate as generateCertificate } from 'selfsigned';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CLIENT_ID, LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID } from '../../../local/defaults.js';
import {
  readIdentityProviderInfo,
  servicePrincipalObjectId,
  startIdentityProvider,
  writeIdentityProviderInfo,
  type IdentityProvider,
  type TokenOptions,
} from '../../../local/identity/provider.js';

const projectRoot = fileURLToPath(new URL('../../../', import.meta.url));
const UNKNOWN_TENANT_ID = '00000000-1111-4222-8333-444444444444';
const V1_ISSUER = `https://sts.windows.net/${LOCAL_HOME_TENANT_ID}/`;
const V1_AUDIENCE = `api://${LOCAL_CLIENT_ID}`;
const ON_BEHALF_OF_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

interface OnBehalfOfCase {
  name: string;
  credential: 'secret' | 'certificate';
  assertion: string;
}

/** What the msal-node child process reports for one case. */
interface OnBehalfOfResult {
  accessToken?: string;
  fromCache?: boolean;
  scopes?: string[];
  tokenType?: string;
  account?: { username: string; homeAccountId: string; tenantId: string } | null;
  error?: { name: string; errorCode: string; subError: string; errorNo: number; claims?: string; message: string };
}

interface JsonResponse {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** GET, or POST of a form, trusting the given CA (default: Node's public CAs). */
async function requestJson(url: string, ca: string | undefined, form?: Record<string, string>, headers: Record<string, string> = {}): Promise<JsonResponse> {
  const dispatcher = new Agent({ connect: { ca } });
  try {
    const response = await fetch(url, { method: form ? 'POST' : 'GET', body: form && new URLSearchParams(form), headers, dispatcher });
    return { status: response.status, headers: Object.fromEntries(response.headers), body: (await response.json()) as Record<string, unknown> };
  } finally {
    await dispatcher.close();
  }
}

function expectEntraError(response: JsonResponse, status: number, error: string, code: number): void {
  expect(response.status).toBe(status);
  expect(response.body).toMatchObject({
    error,
    error_codes: [code],
    error_description: expect.stringMatching(new RegExp(`^AADSTS${code}: .+ Trace ID: \\S+ Correlation ID: \\S+ Timestamp: `)),
    timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/),
    trace_id: expect.any(String),
    correlation_id: expect.any(String),
    error_uri: `https://login.microsoftonline.com/error?code=${code}`,
  });
}

/** The token with the first character of its signature changed. */
function tamperSignature(token: string): string {
  const signatureStart = token.lastIndexOf('.') + 1;
  const replacement = token[signatureStart] === 'A' ? 'B' : 'A';
  return `${token.slice(0, signatureStart)}${replacement}${token.slice(signatureStart + 1)}`;
}

async function signedByAnotherKey(payload: JWTPayload): Promise<string> {
  const { privateKey } = await generateKeyPair('RS256');
  return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: 'unknown-key' }).sign(privateKey);
}

describe('local identity provider', () => {
  let provider: IdentityProvider;
  let jwks: JSONWebKeySet;
  const tokenUrl = (tenantId = LOCAL_HOME_TENANT_ID) => `${provider.authorityHost}/${tenantId}/oauth2/v2.0/token`;
  const post = (form: Record<string, string>, tenantId?: string) => requestJson(tokenUrl(tenantId), provider.caCertPem, form);

  beforeAll(async () => {
    provider = await startIdentityProvider({ tenants: [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID], clientId: LOCAL_CLIENT_ID });
    const keys = await requestJson(`${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/discovery/v2.0/keys`, provider.caCertPem);
    jwks = keys.body as unknown as JSONWebKeySet;
  }, 30_000);

  afterAll(async () => {
    await provider?.close();
  });

  describe('TLS', () => {
    it('uses a certificate valid for localhost and 127.0.0.1 that clients trusting caCertPem accept', async () => {
      const certificate = new X509Certificate(provider.caCertPem);
      expect(certificate.checkHost('localhost')).toBe('localhost');
      expect(certificate.checkIP('127.0.0.1')).toBe('127.0.0.1');
      expect(provider.authorityHost).toBe(`https://localhost:${provider.port}`);

      const metadataPath = `/${LOCAL_HOME_TENANT_ID}/v2.0/.well-known/openid-configuration`;
      const viaIp = await requestJson(`https://127.0.0.1:${provider.port}${metadataPath}`, provider.caCertPem);
      expect(viaIp.status).toBe(200);
      await expect(readFile(provider.caCertPath, 'utf8')).resolves.toBe(provider.caCertPem);
    });

    it('is refused by clients that trust only the public CAs', async () => {
      await expect(requestJson(`${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/discovery/keys`, undefined)).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/self-signed certificate/) },
      });
    });
  });

  describe('metadata and keys', () => {
    it('serves v2 OpenID metadata on Entra paths', async () => {
      const before = provider.counts.metadata;
      const response = await requestJson(`${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/v2.0/.well-known/openid-configuration`, provider.caCertPem);
      const base = `${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}`;
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        issuer: `${base}/v2.0`,
        jwks_uri: `${base}/discovery/v2.0/keys`,
        token_endpoint: `${base}/oauth2/v2.0/token`,
        authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
        end_session_endpoint: `${base}/oauth2/v2.0/logout`,
        id_token_signing_alg_values_supported: ['RS256'],
        subject_types_supported: ['pairwise'],
        tenant_region_scope: expect.any(String),
        cloud_instance_name: expect.any(String),
      });
      expect(provider.counts.metadata).toBe(before + 1);
    });

    it('serves v1 OpenID metadata with the sts.windows.net issuer', async () => {
      const response = await requestJson(`${provider.authorityHost}/${LOCAL_OTHER_TENANT_ID}/.well-known/openid-configuration`, provider.caCertPem);
      expect(response.body).toMatchObject({
        issuer: `https://sts.windows.net/${LOCAL_OTHER_TENANT_ID}/`,
        jwks_uri: `${provider.authorityHost}/${LOCAL_OTHER_TENANT_ID}/discovery/keys`,
        token_endpoint: `${provider.authorityHost}/${LOCAL_OTHER_TENANT_ID}/oauth2/token`,
      });
    });

    it('publishes only the public signing key, like Entra (no alg)', async () => {
      const before = provider.counts.jwks;
      const v1Keys = await requestJson(`${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/discovery/keys`, provider.caCertPem);
      expect(provider.counts.jwks).toBe(before + 1);
      for (const keySet of [jwks, v1Keys.body as unknown as JSONWebKeySet]) {
        expect(keySet.keys).toHaveLength(1);
        const [key] = keySet.keys as [JWK];
        expect(key).toMatchObject({ kty: 'RSA', use: 'sig', kid: provider.signingKid, x5t: provider.signingKid });
        expect(key).not.toHaveProperty('alg');
        for (const privateMember of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(key).not.toHaveProperty(privateMember);
        // The x5c certificate holds the same public key.
        const certificate = new X509Certificate(Buffer.from(key.x5c![0]!, 'base64'));
        expect(certificate.publicKey.export({ format: 'jwk' }).n).toBe(key.n);
      }
      expect(jwks.keys[0]).toHaveProperty('issuer', `${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/v2.0`);
    });

    it('answers Entra invalid_tenant for a tenant it does not serve', async () => {
      const response = await requestJson(`${provider.authorityHost}/${UNKNOWN_TENANT_ID}/v2.0/.well-known/openid-configuration`, provider.caCertPem);
      expectEntraError(response, 400, 'invalid_tenant', 90002);
    });

    it('answers 404 JSON for unknown paths', async () => {
      const response = await requestJson(`${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/nothing-here`, provider.caCertPem);
      expect(response.status).toBe(404);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toHaveProperty('error', 'not_found');
    });
  });

  describe('issueToken', () => {
    it('mints v1 user tokens that jose verifies with the v1 issuer and api:// audience', async () => {
      const token = await provider.issueToken({
        tenantId: LOCAL_HOME_TENANT_ID,
        kind: 'user',
        roles: ['LMS.Admin'],
        username: 'ada@contoso.test',
        name: 'Ada',
      });
      const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), { issuer: V1_ISSUER, audience: V1_AUDIENCE });
      expect(protectedHeader).toEqual({ alg: 'RS256', typ: 'JWT', kid: provider.signingKid, x5t: provider.signingKid });
      expect(payload).toMatchObject({
        ver: '1.0',
        tid: LOCAL_HOME_TENANT_ID,
        appid: LOCAL_CLIENT_ID,
        appidacr: '0',
        upn: 'ada@contoso.test',
        unique_name: 'ada@contoso.test',
        name: 'Ada',
        scp: 'access_as_user',
        roles: ['LMS.Admin'],
        amr: ['pwd'],
      });
      expect(payload.oid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(payload.sub).not.toBe(payload.oid);
      expect(payload.exp! - payload.iat!).toBe(3600);
      expect(payload).not.toHaveProperty('idtyp');
    });

    it('keeps a user oid stable per tenant and user name, and different across tenants', async () => {
      const oidOf = async (tenantId: string, username: string) => decodeJwt(await provider.issueToken({ tenantId, kind: 'user', username })).oid;
      const homeOid = await oidOf(LOCAL_HOME_TENANT_ID, 'dev@contoso.test');
      expect(await oidOf(LOCAL_HOME_TENANT_ID, 'Dev@Contoso.test')).toBe(homeOid);
      expect(await oidOf(LOCAL_OTHER_TENANT_ID, 'dev@contoso.test')).not.toBe(homeOid);
      expect(await oidOf(LOCAL_HOME_TENANT_ID, 'someone@contoso.test')).not.toBe(homeOid);
    });

    it('mints v2 app-only tokens with the v2 issuer, the client id audience and idtyp app', async () => {
      const token = await provider.issueToken({ tenantId: LOCAL_OTHER_TENANT_ID, kind: 'app', version: 2, roles: ['LMS.Index.Write'] });
      const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), {
        issuer: `${provider.authorityHost}/${LOCAL_OTHER_TENANT_ID}/v2.0`,
        audience: LOCAL_CLIENT_ID,
      });
      expect(payload).toMatchObject({ ver: '2.0', tid: LOCAL_OTHER_TENANT_ID, azp: LOCAL_CLIENT_ID, azpacr: '1', idtyp: 'app', roles: ['LMS.Index.Write'] });
      expect(payload.sub).toBe(payload.oid);
      for (const userClaim of ['scp', 'upn', 'preferred_username', 'name']) expect(payload).not.toHaveProperty(userClaim);
    });

    it('applies audience, lifetime and extra claim overrides', async () => {
      const token = await provider.issueToken({
        tenantId: LOCAL_HOME_TENANT_ID,
        kind: 'user',
        audience: 'api://someone-else',
        expiresInSeconds: 60,
        extraClaims: { ver: '9.9', custom: true },
      });
      const payload = decodeJwt(token);
      expect(payload).toMatchObject({ aud: 'api://someone-else', ver: '9.9', custom: true });
      expect(payload.exp! - payload.iat!).toBe(60);
    });

    it('exposes a private JWK that signs tokens the published key set accepts', async () => {
      const privateKey = await importJWK(provider.privateJwk, 'RS256');
      const forged = await new SignJWT({ roles: ['LMS.Admin'] })
        .setProtectedHeader({ alg: 'RS256', kid: provider.signingKid })
        .setIssuer(V1_ISSUER)
        .setAudience(V1_AUDIENCE)
        .setExpirationTime('5m')
        .sign(privateKey);
      await expect(jwtVerify(forged, createLocalJWKSet(jwks), { issuer: V1_ISSUER, audience: V1_AUDIENCE })).resolves.toBeDefined();
    });
  });

  describe('token endpoint', () => {
    it('issues user tokens for the password grant, honouring the local extension fields', async () => {
      const before = provider.counts.token;
      const oid = '12345678-90ab-4cde-8f01-234567890abc';
      const response = await post({
        grant_type: 'password',
        client_id: LOCAL_CLIENT_ID,
        username: 'grace@contoso.test',
        password: 'x',
        scope: `api://${LOCAL_CLIENT_ID}/access_as_user openid profile offline_access`,
        roles: 'LMS.Admin, LMS.Reader',
        name: 'Grace Hopper',
        oid,
        expires_in: '120',
      });
      expect(response.status).toBe(200);
      expect(response.headers['cache-control']).toMatch(/no-store/);
      expect(response.body).toMatchObject({
        token_type: 'Bearer',
        scope: `api://${LOCAL_CLIENT_ID}/access_as_user`,
        expires_in: 120,
        ext_expires_in: 120,
      });
      const { payload } = await jwtVerify(response.body.access_token as string, createLocalJWKSet(jwks), { issuer: V1_ISSUER, audience: V1_AUDIENCE });
      expect(payload).toMatchObject({ upn: 'grace@contoso.test', name: 'Grace Hopper', oid, scp: 'access_as_user', roles: ['LMS.Admin', 'LMS.Reader'] });
      expect(payload.exp! - payload.iat!).toBe(120);
      expect(provider.counts.token).toBe(before + 1);
    });

    it('issues v2 user tokens when token_version=2', async () => {
      const response = await post({
        grant_type: 'password',
        client_id: LOCAL_CLIENT_ID,
        username: 'dev@contoso.test',
        password: 'x',
        scope: `api://${LOCAL_CLIENT_ID}/.default`,
        token_version: '2',
      });
      const { payload } = await jwtVerify(response.body.access_token as string, createLocalJWKSet(jwks), {
        issuer: `${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/v2.0`,
        audience: LOCAL_CLIENT_ID,
      });
      expect(payload).toMatchObject({ ver: '2.0', preferred_username: 'dev@contoso.test', scp: 'access_as_user', azp: LOCAL_CLIENT_ID });
      expect(payload).not.toHaveProperty('roles');
    });

    it('issues app-only tokens for client credentials, with the secret in the body or a Basic header', async () => {
      const daemonClientId = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
      const scope = `api://${LOCAL_CLIENT_ID}/.default`;
      const viaBody = await post({ grant_type: 'client_credentials', client_id: daemonClientId, client_secret: 's', scope, roles: 'LMS.Index.Write' });
      const viaBasic = await requestJson(
        tokenUrl(),
        provider.caCertPem,
        { grant_type: 'client_credentials', scope },
        {
          Authorization: `Basic ${Buffer.from(`${daemonClientId}:s`).toString('base64')}`,
        },
      );
      for (const response of [viaBody, viaBasic]) {
        expect(response.body).toMatchObject({ token_type: 'Bearer', scope, expires_in: 3600 });
        const { payload } = await jwtVerify(response.body.access_token as string, createLocalJWKSet(jwks), { issuer: V1_ISSUER, audience: V1_AUDIENCE });
        expect(payload).toMatchObject({ idtyp: 'app', appid: daemonClientId, appidacr: '1' });
        expect(payload).not.toHaveProperty('scp');
      }
      expect(decodeJwt(viaBody.body.access_token as string).roles).toEqual(['LMS.Index.Write']);
    });

    it('puts the resource as requested in the aud of v1 tokens, like Entra', async () => {
      const response = await post({ grant_type: 'client_credentials', client_id: LOCAL_CLIENT_ID, client_secret: 's', scope: `${LOCAL_CLIENT_ID}/.default` });
      expect(decodeJwt(response.body.access_token as string).aud).toBe(LOCAL_CLIENT_ID);
    });

    it.each([
      [
        'a client credentials scope without /.default',
        { grant_type: 'client_credentials', client_id: LOCAL_CLIENT_ID, client_secret: 's', scope: `api://${LOCAL_CLIENT_ID}/access_as_user` },
        400,
        'invalid_scope',
        1002012,
      ],
      [
        'a missing client secret',
        { grant_type: 'client_credentials', client_id: LOCAL_CLIENT_ID, scope: `api://${LOCAL_CLIENT_ID}/.default` },
        401,
        'invalid_client',
        7000218,
      ],
      [
        'a scope of another resource',
        { grant_type: 'password', client_id: LOCAL_CLIENT_ID, username: 'dev@contoso.test', password: 'x', scope: 'api://other-api/access_as_user' },
        400,
        'invalid_resource',
        500011,
      ],
      [
        'a scope without resource',
        { grant_type: 'password', client_id: LOCAL_CLIENT_ID, username: 'dev@contoso.test', password: 'x', scope: 'openid profile' },
        400,
        'invalid_scope',
        70011,
      ],
      [
        'a missing password',
        { grant_type: 'password', client_id: LOCAL_CLIENT_ID, username: 'dev@contoso.test', scope: `api://${LOCAL_CLIENT_ID}/access_as_user` },
        400,
        'invalid_request',
        900144,
      ],
      ['a missing grant type', { client_id: LOCAL_CLIENT_ID }, 400, 'invalid_request', 900144],
      [
        'an unsupported grant type',
        { grant_type: 'authorization_code', client_id: LOCAL_CLIENT_ID, client_secret: 's', code: 'x' },
        400,
        'unsupported_grant_type',
        70003,
      ],
      [
        'an invalid token_version',
        { grant_type: 'client_credentials', client_id: LOCAL_CLIENT_ID, client_secret: 's', scope: `api://${LOCAL_CLIENT_ID}/.default`, token_version: '3' },
        400,
        'invalid_request',
        9002313,
      ],
    ])('rejects %s with an Entra error', async (_case, form, status, error, code) => {
      expectEntraError(await post(form), status, error, code);
    });

    it('rejects tenants it does not serve and echoes the client request id as correlation id', async () => {
      const response = await requestJson(
        tokenUrl(UNKNOWN_TENANT_ID),
        provider.caCertPem,
        { grant_type: 'client_credentials', client_id: LOCAL_CLIENT_ID, client_secret: 's', scope: `api://${LOCAL_CLIENT_ID}/.default` },
        { 'client-request-id': 'my-correlation-id' },
      );
      expectEntraError(response, 400, 'invalid_tenant', 90002);
      expect(response.body.correlation_id).toBe('my-correlation-id');
    });

    it('rejects GET with Entra AADSTS900561', async () => {
      expectEntraError(await requestJson(tokenUrl(), provider.caCertPem), 400, 'invalid_request', 900561);
    });
  });

  describe('On-Behalf-Of grant', () => {
    const graphAudience = 'https://graph.microsoft.com';
    const graphScope = `${graphAudience}/User.Read.All`;
    const userAssertion = (options: Partial<TokenOptions> = {}) =>
      provider.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', username: 'ada@contoso.test', name: 'Ada', ...options });
    const oboForm = (assertion: string, fields: Record<string, string> = {}): Record<string, string> => ({
      grant_type: ON_BEHALF_OF_GRANT_TYPE,
      client_id: LOCAL_CLIENT_ID,
      client_secret: 's',
      assertion,
      requested_token_use: 'on_behalf_of',
      scope: graphScope,
      ...fields,
    });
    /** A client assertion as msal-node builds it from a certificate; the provider does not check its signature. */
    const clientAssertion = async (claims: JWTPayload = {}, header: Record<string, unknown> = { alg: 'PS256', 'x5t#S256': 'dGh1bWJwcmludA' }) => {
      const { privateKey } = await generateKeyPair('PS256');
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ aud: tokenUrl(), iss: LOCAL_CLIENT_ID, sub: LOCAL_CLIENT_ID, nbf: now, exp: now + 600, jti: 'j', ...claims })
        .setProtectedHeader(header as JWTHeaderParameters)
        .sign(privateKey);
    };
    const withClientAssertion = async (assertion: string, clientAssertionJwt: string): Promise<Record<string, string>> => {
      const { client_secret: _secret, ...form } = oboForm(assertion);
      return { ...form, client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: clientAssertionJwt };
    };

    it('exchanges a user token to the API for a v1 Graph token of the same user, with id_token and client_info on request', async () => {
      const before = { token: provider.counts.token, onBehalfOf: provider.counts.onBehalfOf };
      const assertion = await userAssertion();
      const response = await post(oboForm(assertion, { scope: `${graphScope} openid profile offline_access`, client_info: '1' }));

      expect(response.status).toBe(200);
      expect(response.headers['cache-control']).toMatch(/no-store/);
      expect(response.body).toMatchObject({ token_type: 'Bearer', scope: graphScope, expires_in: 3600, ext_expires_in: 3600 });
      expect(response.body).not.toHaveProperty('refresh_token');
      const user = decodeJwt(assertion);
      const { payload } = await jwtVerify(response.body.access_token as string, createLocalJWKSet(jwks), { issuer: V1_ISSUER, audience: graphAudience });
      expect(payload).toMatchObject({
        ver: '1.0',
        scp: 'User.Read.All',
        oid: user.oid,
        tid: LOCAL_HOME_TENANT_ID,
        name: 'Ada',
        upn: 'ada@contoso.test',
        appid: LOCAL_CLIENT_ID,
        appidacr: '1',
      });
      expect(payload).not.toHaveProperty('roles');

      const { payload: idToken } = await jwtVerify(response.body.id_token as string, createLocalJWKSet(jwks), {
        issuer: `${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/v2.0`,
        audience: LOCAL_CLIENT_ID,
      });
      expect(idToken).toMatchObject({ ver: '2.0', oid: user.oid, tid: LOCAL_HOME_TENANT_ID, preferred_username: 'ada@contoso.test', name: 'Ada' });
      expect(JSON.parse(Buffer.from(response.body.client_info as string, 'base64url').toString('utf8'))).toEqual({ uid: user.oid, utid: LOCAL_HOME_TENANT_ID });
      expect(provider.counts).toMatchObject({ token: before.token + 1, onBehalfOf: before.onBehalfOf + 1 });
    });

    it('takes v2 assertions, grants the consented Graph permissions for .default, and adds no id_token without openid', async () => {
      const assertion = await userAssertion({ version: 2, username: 'grace@contoso.test' });
      const response = await post(oboForm(assertion, { scope: `${graphAudience}/.default` }));
      expect(response.body).toMatchObject({ scope: `${graphAudience}/User.Read ${graphAudience}/User.Read.All` });
      expect(response.body).not.toHaveProperty('id_token');
      expect(response.body).not.toHaveProperty('client_info');
      expect(decodeJwt(response.body.access_token as string)).toMatchObject({
        aud: graphAudience,
        scp: 'User.Read User.Read.All',
        upn: 'grace@contoso.test',
        oid: decodeJwt(assertion).oid,
      });
    });

    it('authenticates the client with a certificate assertion (appidacr 2)', async () => {
      const response = await post(await withClientAssertion(await userAssertion(), await clientAssertion()));
      expect(response.status).toBe(200);
      expect(decodeJwt(response.body.access_token as string).appidacr).toBe('2');
    });

    it.each([
      [
        'a client assertion of another type',
        async () => ({ ...(await withClientAssertion(await userAssertion(), await clientAssertion())), client_assertion_type: 'urn:other' }),
        400,
        'invalid_request',
        9002313,
      ],
      ['a malformed client assertion', async () => withClientAssertion(await userAssertion(), 'not-a-jwt'), 401, 'invalid_client', 50027],
      [
        'a client assertion without certificate thumbprint',
        async () => withClientAssertion(await userAssertion(), await clientAssertion({}, { alg: 'PS256' })),
        401,
        'invalid_client',
        700027,
      ],
      [
        'a client assertion of another client',
        async () => withClientAssertion(await userAssertion(), await clientAssertion({ iss: 'someone-else', sub: 'someone-else' })),
        401,
        'invalid_client',
        700021,
      ],
      [
        'a client assertion for another audience',
        async () => withClientAssertion(await userAssertion(), await clientAssertion({ aud: 'https://login.microsoftonline.com/x/oauth2/v2.0/token' })),
        401,
        'invalid_client',
        700023,
      ],
      [
        'an expired client assertion',
        async () => withClientAssertion(await userAssertion(), await clientAssertion({ exp: Math.floor(Date.now() / 1000) - 10 })),
        401,
        'invalid_client',
        700024,
      ],
    ])('rejects %s', async (_case, form, status, error, code) => {
      expectEntraError(await post(await form()), status, error, code);
    });

    it.each([
      ['no client credential', async () => ({ ...oboForm(await userAssertion()), client_secret: '' }), 401, 'invalid_client', 7000218],
      ['no requested_token_use', async () => ({ ...oboForm(await userAssertion()), requested_token_use: '' }), 400, 'invalid_request', 900144],
      ['another requested_token_use', async () => oboForm(await userAssertion(), { requested_token_use: 'something_else' }), 400, 'invalid_request', 9002313],
      ['no assertion', async () => oboForm(''), 400, 'invalid_request', 900144],
      ['a malformed assertion', async () => oboForm('not.a.jwt'), 400, 'invalid_grant', 50027],
      ['an assertion with a tampered signature', async () => oboForm(tamperSignature(await userAssertion())), 400, 'invalid_grant', 50013],
      ['an assertion signed by an unknown key', async () => oboForm(await signedByAnotherKey(decodeJwt(await userAssertion()))), 400, 'invalid_grant', 50013],
      ['an expired assertion', async () => oboForm(await userAssertion({ expiresInSeconds: -60 })), 400, 'invalid_grant', 500133],
      ["another tenant's assertion", async () => oboForm(await userAssertion({ tenantId: LOCAL_OTHER_TENANT_ID })), 400, 'invalid_grant', 50013],
      ['an assertion for another audience', async () => oboForm(await userAssertion({ audience: graphAudience })), 400, 'invalid_grant', 500131],
      [
        'an assertion presented by another client',
        async () => oboForm(await userAssertion(), { client_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee' }),
        400,
        'invalid_grant',
        500131,
      ],
      [
        'an app-only assertion',
        async () => oboForm(await provider.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'app', roles: ['LMS.Admin'] })),
        400,
        'invalid_grant',
        50013,
      ],
      ['a user assertion without scopes', async () => oboForm(await userAssertion({ scopes: [] })), 400, 'invalid_grant', 50013],
      [
        'a scope of a resource the tenant does not know',
        async () => oboForm(await userAssertion(), { scope: 'https://vault.azure.net/user_impersonation' }),
        400,
        'invalid_resource',
        500011,
      ],
      [
        '.default with other scopes',
        async () => oboForm(await userAssertion(), { scope: `${graphAudience}/.default ${graphScope}` }),
        400,
        'invalid_scope',
        70011,
      ],
    ])('rejects %s', async (_case, form, status, error, code) => {
      const response = await post(await form());
      expectEntraError(response, status, error, code);
      expect(response.body).not.toHaveProperty('suberror');
    });

    it('answers users named needs-consent with consent_required, as Entra does', async () => {
      const response = await post(oboForm(await userAssertion({ username: 'needs-consent@contoso.test' })));
      expectEntraError(response, 400, 'invalid_grant', 65001);
      expect(response.body).toMatchObject({ suberror: 'consent_required' });
      expect(response.body.error_description).toContain(`has not consented to use the application with ID '${LOCAL_CLIENT_ID}'`);
    });

    it('answers users named needs-mfa with interaction_required and a claims challenge, as Entra does', async () => {
      const response = await post(oboForm(await userAssertion({ username: 'Needs-MFA.alice@contoso.test', version: 2 })));
      expectEntraError(response, 400, 'interaction_required', 50076);
      expect(response.body).toMatchObject({ suberror: 'basic_action' });
      const claims = JSON.parse(response.body.claims as string) as unknown;
      expect(claims).toEqual({ access_token: { capolids: { essential: true, values: [expect.stringMatching(/^[0-9a-f-]{36}$/)] } } });
    });
  });

  describe('real clients trusting the CA through NODE_EXTRA_CA_CERTS', () => {
    it('msal-node client credentials and jose createRemoteJWKSet work against it', async () => {
      const metadata = await requestJson(`${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/v2.0/.well-known/openid-configuration`, provider.caCertPem);
      const jwksFetchesBefore = provider.counts.jwks;
      const script = `
        import { ConfidentialClientApplication } from '@azure/msal-node';
        import { createRemoteJWKSet, jwtVerify } from 'jose';
        const { authorityHost, tenantId, clientId, metadata, issuer } = JSON.parse(process.argv[1]);
        const app = new ConfidentialClientApplication({ auth: {
          clientId, clientSecret: 'local', authority: authorityHost + '/' + tenantId,
          knownAuthorities: [new URL(authorityHost).host], authorityMetadata: metadata,
        } });
        const result = await app.acquireTokenByClientCredential({ scopes: ['api://' + clientId + '/.default'] });
        const keys = createRemoteJWKSet(new URL(JSON.parse(metadata).jwks_uri));
        const { payload } = await jwtVerify(result.accessToken, keys, { issuer, audience: 'api://' + clientId });
        console.log(JSON.stringify({ tokenType: result.tokenType, payload }));
      `;
      const input = JSON.stringify({
        authorityHost: provider.authorityHost,
        tenantId: LOCAL_HOME_TENANT_ID,
        clientId: LOCAL_CLIENT_ID,
        metadata: JSON.stringify(metadata.body),
        issuer: V1_ISSUER,
      });
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, input], {
        cwd: projectRoot,
        env: { ...process.env, NODE_EXTRA_CA_CERTS: provider.caCertPath },
      });
      const output = JSON.parse(stdout) as { tokenType: string; payload: Record<string, unknown> };
      expect(output.tokenType).toBe('Bearer');
      expect(output.payload).toMatchObject({ tid: LOCAL_HOME_TENANT_ID, idtyp: 'app', appid: LOCAL_CLIENT_ID });
      expect(provider.counts.jwks).toBe(jwksFetchesBefore + 1);
    }, 30_000);

    it('msal-node acquireTokenOnBehalfOf gets Graph tokens and raises the errors Entra would cause', async () => {
      const graphScopes = ['https://graph.microsoft.com/User.Read.All'];
      const assertionFor = (username: string, options: Partial<TokenOptions> = {}) =>
        provider.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', username, ...options });
      const adaAssertion = await assertionFor('ada@contoso.test', { name: 'Ada' });
      const cases: OnBehalfOfCase[] = [
        { name: 'success', credential: 'secret', assertion: adaAssertion },
        { name: 'cached', credential: 'secret', assertion: adaAssertion },
        { name: 'certificate', credential: 'certificate', assertion: await assertionFor('grace@contoso.test', { version: 2 }) },
        { name: 'consent', credential: 'secret', assertion: await assertionFor('needs-consent@contoso.test') },
        { name: 'mfa', credential: 'secret', assertion: await assertionFor('needs-mfa@contoso.test') },
        { name: 'badSignature', credential: 'secret', assertion: tamperSignature(await assertionFor('ada@contoso.test')) },
        { name: 'expired', credential: 'secret', assertion: await assertionFor('ada@contoso.test', { expiresInSeconds: -60 }) },
        { name: 'appOnly', credential: 'secret', assertion: await provider.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'app' }) },
      ];
      const certificate = await generateCertificate([{ name: 'commonName', value: 'Local API client' }], { keySize: 2048, algorithm: 'sha256' });
      const onBehalfOfBefore = provider.counts.onBehalfOf;
      const script = `
        import { ConfidentialClientApplication, InteractionRequiredAuthError, ServerError } from '@azure/msal-node';
        const { authorityHost, tenantId, clientId, certificate, scopes, cases } = JSON.parse(process.argv[1]);
        const auth = { clientId, authority: authorityHost + '/' + tenantId, knownAuthorities: [new URL(authorityHost).host] };
        const apps = {
          secret: new ConfidentialClientApplication({ auth: { ...auth, clientSecret: 'local' } }),
          certificate: new ConfidentialClientApplication({ auth: { ...auth, clientCertificate: certificate } }),
        };
        const results = {};
        for (const { name, credential, assertion } of cases) {
          try {
            const result = await apps[credential].acquireTokenOnBehalfOf({ oboAssertion: assertion, scopes });
            const { accessToken, fromCache, scopes: grantedScopes, account, tokenType } = result;
            results[name] = { accessToken, fromCache, scopes: grantedScopes, tokenType,
              account: account && { username: account.username, homeAccountId: account.homeAccountId, tenantId: account.tenantId } };
          } catch (error) {
            const { name: errorName, errorCode, subError, errorNo, claims, message } = error;
            results[name] = { error: { name: errorName, errorCode, subError, errorNo, claims, message,
              interactionRequired: error instanceof InteractionRequiredAuthError, serverError: error instanceof ServerError } };
          }
        }
        console.log(JSON.stringify(results));
      `;
      const input = JSON.stringify({
        authorityHost: provider.authorityHost,
        tenantId: LOCAL_HOME_TENANT_ID,
        clientId: LOCAL_CLIENT_ID,
        certificate: {
          thumbprintSha256: createHash('sha256').update(new X509Certificate(certificate.cert).raw).digest('hex'),
          privateKey: certificate.private,
        },
        scopes: graphScopes,
        cases,
      });
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, input], {
        cwd: projectRoot,
        env: { ...process.env, NODE_EXTRA_CA_CERTS: provider.caCertPath },
      });
      const results = JSON.parse(stdout) as Record<string, OnBehalfOfResult>;

      const ada = decodeJwt(adaAssertion);
      const success = results.success!;
      expect(success).toMatchObject({
        fromCache: false,
        tokenType: 'Bearer',
        scopes: graphScopes,
        account: { username: 'ada@contoso.test', homeAccountId: `${String(ada.oid)}.${LOCAL_HOME_TENANT_ID}`, tenantId: LOCAL_HOME_TENANT_ID },
      });
      const { payload } = await jwtVerify(success.accessToken!, createLocalJWKSet(jwks), { issuer: V1_ISSUER, audience: 'https://graph.microsoft.com' });
      expect(payload).toMatchObject({
        scp: 'User.Read.All',
        oid: ada.oid,
        tid: LOCAL_HOME_TENANT_ID,
        name: 'Ada',
        upn: 'ada@contoso.test',
        appid: LOCAL_CLIENT_ID,
      });
      // The same assertion and scopes again: msal-node answers from its cache, so the response was one it can store.
      // (msal-node 7 gives cache hits of On-Behalf-Of no account: it does not find the cached id token.)
      expect(results.cached).toMatchObject({ fromCache: true, accessToken: success.accessToken, account: null });
      expect(decodeJwt(results.certificate!.accessToken!)).toMatchObject({ upn: 'grace@contoso.test', appidacr: '2' });

      expect(results.consent!.error).toMatchObject({
        name: 'InteractionRequiredAuthError',
        interactionRequired: true,
        errorCode: 'invalid_grant',
        subError: 'consent_required',
        errorNo: 65001,
        message: expect.stringContaining('AADSTS65001'),
      });
      expect(results.mfa!.error).toMatchObject({
        name: 'InteractionRequiredAuthError',
        interactionRequired: true,
        errorCode: 'interaction_required',
        subError: 'basic_action',
        errorNo: 50076,
      });
      expect(JSON.parse(results.mfa!.error!.claims!)).toMatchObject({ access_token: { capolids: { essential: true } } });
      for (const [name, code] of [
        ['badSignature', 50013],
        ['expired', 500133],
        ['appOnly', 50013],
      ] as const) {
        expect(results[name]!.error, name).toMatchObject({
          name: 'ServerError',
          serverError: true,
          interactionRequired: false,
          errorCode: 'invalid_grant',
          errorNo: code,
        });
      }
      // Every case but the cached one reached the provider.
      expect(provider.counts.onBehalfOf).toBe(onBehalfOfBefore + cases.length - 1);
    }, 30_000);
  });
});

describe("On-Behalf-Of with a managed identity's token as the client assertion (a federated identity credential)", () => {
  const APP_IDENTITY = '7d1e3c5a-2b4f-4a6e-8c9d-0e1f2a3b4c5d';
  const OTHER_IDENTITY = '8e2f4d6b-3c5a-4b7f-9dae-1f2a3b4c5d6e';
  const EXCHANGE = 'api://AzureADTokenExchange';
  let provider: IdentityProvider;
  let trustedIssuer: string;

  beforeAll(async () => {
    const managedIdentities = { systemAssigned: '9f3a5e7c-4d6b-4c8a-8ebf-2a3b4c5d6e7f', userAssigned: [APP_IDENTITY, OTHER_IDENTITY] };
    provider = await startIdentityProvider({ tenants: [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID], clientId: LOCAL_CLIENT_ID, managedIdentities });
    trustedIssuer = `${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/v2.0`;
    // As `az ad app federated-credential create` on the API's registration, with the identity's object id as subject.
    const subject = servicePrincipalObjectId(LOCAL_HOME_TENANT_ID, APP_IDENTITY);
    provider.addFederatedIdentityCredential({ name: 'function-app', issuer: trustedIssuer, subject, audiences: [EXCHANGE] });
  }, 30_000);
  afterAll(() => provider?.close());

  /** A token of a managed identity from App Service's endpoint, as `@azure/identity` asks for one. */
  async function managedIdentityToken(clientId: string, resource = EXCHANGE): Promise<string> {
    const { IDENTITY_ENDPOINT, IDENTITY_HEADER } = provider.managedIdentity!;
    const query = new URLSearchParams({ resource, 'api-version': '2019-08-01', client_id: clientId });
    const answer = await requestJson(`${IDENTITY_ENDPOINT}?${query.toString()}`, provider.caCertPem, undefined, { 'X-IDENTITY-HEADER': IDENTITY_HEADER });
    expect(answer.status).toBe(200);
    return answer.body.access_token as string;
  }
  /** A token the provider signs for the app's identity, with one claim changed. */
  const identityToken = (options: Partial<TokenOptions>) =>
    provider.issueToken({
      tenantId: LOCAL_HOME_TENANT_ID,
      kind: 'app',
      clientAppId: APP_IDENTITY,
      clientAuthentication: '2',
      version: 2,
      audience: EXCHANGE,
      ...options,
    });
  const onBehalfOf = async (clientAssertion: string) =>
    requestJson(`${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/oauth2/v2.0/token`, provider.caCertPem, {
      grant_type: ON_BEHALF_OF_GRANT_TYPE,
      client_id: LOCAL_CLIENT_ID,
      client_assertion_type: CLIENT_ASSERTION_TYPE,
      client_assertion: clientAssertion,
      assertion: await provider.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', username: 'ada@contoso.test' }),
      requested_token_use: 'on_behalf_of',
      scope: 'https://graph.microsoft.com/User.Read.All',
    });

  it('gives the identity a v2 token for the exchange audience, whose issuer and subject the credential names', async () => {
    expect(decodeJwt(await managedIdentityToken(APP_IDENTITY))).toMatchObject({
      iss: trustedIssuer,
      aud: EXCHANGE,
      sub: servicePrincipalObjectId(LOCAL_HOME_TENANT_ID, APP_IDENTITY),
      azp: APP_IDENTITY,
      ver: '2.0',
    });
  });

  it("takes the trusted identity's token as the client's credential, as a certificate's (appidacr 2)", async () => {
    const answer = await onBehalfOf(await managedIdentityToken(APP_IDENTITY));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(decodeJwt(answer.body.access_token as string)).toMatchObject({ aud: 'https://graph.microsoft.com', appid: LOCAL_CLIENT_ID, appidacr: '2' });
  });

  it.each([
    ['another audience', async () => identityToken({ audience: 'api://AzureADTokenExchangeUSGov' }), 70021],
    ["the identity's token for another resource (v1: another issuer too)", async () => managedIdentityToken(APP_IDENTITY, 'https://storage.azure.com'), 700211],
    ['the v1 issuer', async () => identityToken({ version: 1 }), 700211],
    ["another tenant's issuer", async () => identityToken({ tenantId: LOCAL_OTHER_TENANT_ID }), 700211],
    ['another identity (subject)', async () => managedIdentityToken(OTHER_IDENTITY), 70021],
    ['a signature of another key', async () => signedByAnotherKey(decodeJwt(await managedIdentityToken(APP_IDENTITY))), 700027],
    ['an expired token', async () => identityToken({ expiresInSeconds: -600 }), 700024],
  ])('refuses an assertion with %s', async (_case, assertion, code) => {
    expectEntraError(await onBehalfOf(await assertion()), 401, 'invalid_client', code);
  });
});

describe('an API with further App ID URIs (a Teams tab, an Office add-in)', () => {
  // A single sign-on token of a v1 registration has the add-in's App ID URI as aud, and Entra exchanges it On-Behalf-Of.
  const appIdUri = `api://tab.contoso.test/${LOCAL_CLIENT_ID}`;
  let provider: IdentityProvider;
  let plain: IdentityProvider;
  const tokenUrl = (of: IdentityProvider) => `${of.authorityHost}/${LOCAL_HOME_TENANT_ID}/oauth2/v2.0/token`;
  const userToken = (of: IdentityProvider, resource: string) =>
    requestJson(tokenUrl(of), of.caCertPem, {
      grant_type: 'password',
      client_id: LOCAL_CLIENT_ID,
      username: 'ada@contoso.test',
      password: 'p',
      scope: `${resource}/access_as_user`,
    });
  const onBehalfOf = (of: IdentityProvider, assertion: string) =>
    requestJson(tokenUrl(of), of.caCertPem, {
      grant_type: ON_BEHALF_OF_GRANT_TYPE,
      client_id: LOCAL_CLIENT_ID,
      client_secret: 's',
      assertion,
      requested_token_use: 'on_behalf_of',
      scope: 'https://graph.microsoft.com/User.Read.All',
    });

  beforeAll(async () => {
    [provider, plain] = await Promise.all([
      startIdentityProvider({ tenants: [LOCAL_HOME_TENANT_ID], clientId: LOCAL_CLIENT_ID, appIdUris: [appIdUri.toUpperCase()] }),
      startIdentityProvider({ tenants: [LOCAL_HOME_TENANT_ID], clientId: LOCAL_CLIENT_ID }),
    ]);
  }, 30_000);

  afterAll(async () => {
    await Promise.all([provider?.close(), plain?.close()]);
  });

  it('issues a v1 user token for the App ID URI, whose aud is that URI, and exchanges it On-Behalf-Of as Entra does', async () => {
    const issued = await userToken(provider, appIdUri);
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const assertion = issued.body.access_token as string;
    expect(decodeJwt(assertion)).toMatchObject({ aud: appIdUri, ver: '1.0', scp: 'access_as_user' });
    const exchanged = await onBehalfOf(provider, assertion);
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
    expect(decodeJwt(exchanged.body.access_token as string)).toMatchObject({ aud: 'https://graph.microsoft.com', upn: 'ada@contoso.test' });
  });

  it('knows no App ID URI it was not given: the resource is not found, and such an assertion is for another audience', async () => {
    expectEntraError(await userToken(plain, appIdUri), 400, 'invalid_resource', 500011);
    const assertion = await plain.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', username: 'ada@contoso.test', audience: appIdUri });
    expectEntraError(await onBehalfOf(plain, assertion), 400, 'invalid_grant', 500131);
  });
});

describe('identity provider persistence', () => {
  it('reuses the TLS certificate and signing key from its data directory', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'identity-provider-test-'));
    try {
      const options = { dataDir, tenants: [LOCAL_HOME_TENANT_ID], clientId: LOCAL_CLIENT_ID };
      const first = await startIdentityProvider(options);
      const token = await first.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user' });
      const firstRun = { kid: first.signingKid, cert: first.caCertPem, path: first.caCertPath };
      await first.close();

      const second = await startIdentityProvider(options);
      try {
        expect({ kid: second.signingKid, cert: second.caCertPem, path: second.caCertPath }).toEqual(firstRun);
        expect(second.caCertPath).toBe(path.join(dataDir, 'tls-cert.pem'));
        const keys = await requestJson(`${second.authorityHost}/${LOCAL_HOME_TENANT_ID}/discovery/keys`, second.caCertPem);
        await expect(jwtVerify(token, createLocalJWKSet(keys.body as unknown as JSONWebKeySet), { issuer: V1_ISSUER })).resolves.toBeDefined();
      } finally {
        await second.close();
      }
      expect(existsSync(firstRun.path)).toBe(true);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  it('serves with a TLS certificate it is given, and leaves its file alone', async () => {
    const certificateSource = await startIdentityProvider({ tenants: [LOCAL_HOME_TENANT_ID], clientId: LOCAL_CLIENT_ID });
    const tlsDir = await mkdtemp(path.join(os.tmpdir(), 'identity-provider-tls-'));
    try {
      const certPath = path.join(tlsDir, 'shared.pem');
      const tls = {
        cert: certificateSource.caCertPem,
        key: await readFile(path.join(path.dirname(certificateSource.caCertPath), 'tls-key.pem'), 'utf8'),
        certPath,
      };
      await writeFile(certPath, tls.cert);
      const provider = await startIdentityProvider({ tenants: [LOCAL_HOME_TENANT_ID], clientId: LOCAL_CLIENT_ID, tls });
      try {
        expect({ pem: provider.caCertPem, path: provider.caCertPath }).toEqual({ pem: tls.cert, path: certPath });
        const response = await requestJson(`${provider.authorityHost}/${LOCAL_HOME_TENANT_ID}/discovery/keys`, tls.cert);
        expect(response.status).toBe(200);
      } finally {
        await provider.close();
      }
      expect(existsSync(certPath)).toBe(true);
    } finally {
      await certificateSource.close();
      await rm(tlsDir, { recursive: true, force: true });
    }
  }, 30_000);

  it('removes the temporary CA file of an ephemeral provider on close', async () => {
    const provider = await startIdentityProvider({ tenants: [LOCAL_HOME_TENANT_ID], clientId: LOCAL_CLIENT_ID });
    expect(existsSync(provider.caCertPath)).toBe(true);
    await provider.close();
    expect(existsSync(provider.caCertPath)).toBe(false);
  }, 30_000);

  it('round-trips provider.json and explains a missing or unreadable one', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'identity-provider-info-'));
    try {
      const info = { authorityHost: 'https://localhost:7072', tenants: [LOCAL_HOME_TENANT_ID], clientId: LOCAL_CLIENT_ID, caCertPath: '/x/tls-cert.pem' };
      const file = await writeIdentityProviderInfo(path.join(dataDir, 'identity'), info);
      expect(file).toBe(path.join(dataDir, 'identity', 'provider.json'));
      await expect(readIdentityProviderInfo(path.join(dataDir, 'identity'))).resolves.toEqual(info);
      await expect(readIdentityProviderInfo(dataDir)).rejects.toThrow(/npm start/);
      await writeFile(file, '{ "authorityHost": ');
      await expect(readIdentityProviderInfo(path.join(dataDir, 'identity'))).rejects.toThrow(/is not a valid identity provider description/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
