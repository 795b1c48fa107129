/**
 * The token validator against an issuer of this file's own: RS256 keys made with jose, OpenID metadata
 * (v1 and v2) and a key set served over HTTP on this machine, so every claim and every failure of the
 * identity provider can be chosen. The real jose and fetch code paths run; nothing is mocked.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../../local/identity/provider.js';
import { readAuthSettings, type AuthSettings } from '../../../shared/settings/read.js';
import { CLOCK_SKEW_SECONDS, createTokenValidator, invalidToken, TOKEN_REFUSAL_REASONS } from '../../../shared/auth/token-validator.js';
import { ApiError, DependencyUnavailableError } from '../../../shared/errors.js';
import { translate, type MessageKey } from '../../../shared/messages/catalog.js';
import { startSmallServer, type SmallServer } from '../../support/small-server.js';

const TENANT = '6f1c2a4e-3b5d-4c7e-9a10-1b2c3d4e5f60';
const SECOND_TENANT = '9e8d7c6b-5a49-4382-8716-0f1e2d3c4b5a';
const UNKNOWN_TENANT = '0a0b0c0d-1111-4222-8333-444455556666';
const CLIENT_ID = 'c0ffee00-0000-4000-8000-000000000001';
const OID = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';

const issuerV1 = (tenant: string) => `https://sts.example.test/${tenant}/`;
const issuerV2 = (tenant: string) => `https://login.example.test/${tenant}/v2.0`;

/** What the issuer answers on each path; a test may replace an answer for a moment. */
type Answer = (request: IncomingMessage, response: ServerResponse) => void;

let server: SmallServer;
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
let privateJwk: JWK;
let jwks: { keys: object[] };
const KID = 'key-1';
const overrides = new Map<string, Answer>();

function json(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

function answer(request: IncomingMessage, response: ServerResponse) {
  const path = new URL(request.url ?? '/', 'http://x').pathname;
  const override = overrides.get(path);
  if (override) return override(request, response);
  const match = /^\/([^/]+)\/(v2\.0\/\.well-known\/openid-configuration|\.well-known\/openid-configuration|keys)$/.exec(path);
  if (!match) return json(response, 404, {});
  const [, tenant, what] = match;
  if (what === 'keys') return json(response, 200, jwks);
  const v2 = what!.startsWith('v2.0');
  return json(response, 200, { issuer: v2 ? issuerV2(tenant!) : issuerV1(tenant!), jwks_uri: `${server.url}/${tenant}/keys` });
}

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  privateKey = pair.privateKey;
  privateJwk = await exportJWK(pair.privateKey);
  // As Entra publishes them: no `alg` member, so the validator's own algorithm list decides.
  jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: KID, use: 'sig' }] };
  server = await startSmallServer(answer);
});
afterAll(() => server.close());

function settings(overridden: Partial<AuthSettings> = {}): AuthSettings {
  return {
    homeTenantId: TENANT,
    allowedTenants: [TENANT, SECOND_TENANT],
    clientId: CLIENT_ID,
    audiences: [`api://${CLIENT_ID}`, CLIENT_ID, 'api://teams.example.test/app'],
    authorityHost: server.url,
    defaultRole: undefined,
    ...overridden,
  };
}

const now = () => Math.floor(Date.now() / 1000);

/**
 * A v2 user token of TENANT with the API's scope, as Entra issues one; `claims` add to or replace (undefined removes) its
 * claims. It names the client app that asked for it as its version does: `azp`, or `appid` in a v1 token.
 */
async function token(claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const base: JWTPayload = {
    iss: issuerV2(TENANT),
    aud: CLIENT_ID,
    tid: TENANT,
    oid: OID,
    ver: '2.0',
    ...(claims.ver === '1.0' ? { appid: CLIENT_ID } : { azp: CLIENT_ID }),
    scp: 'access_as_user',
    iat: now() - 10,
    nbf: now() - 10,
    exp: now() + 3600,
    ...claims,
  };
  const payload = Object.fromEntries(Object.entries(base).filter(([, value]) => value !== undefined));
  return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: KID, typ: 'JWT', ...header }).sign(privateKey);
}

const refused = (messageKey = 'tokenInvalid') =>
  expect.objectContaining({ status: 401, messageKey, options: { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } } });
/** A genuine token's refusal: its message says why, and so does the challenge's error_description (RFC 6750), in English. */
const refusedBecause = (messageKey: MessageKey) =>
  expect.objectContaining({
    status: 401,
    messageKey,
    // The clock skew the not-yet-valid message names: five minutes.
    options: { headers: { 'WWW-Authenticate': `Bearer error="invalid_token", error_description="${translate(messageKey, 'en', { skewMinutes: 5 })}"` } },
  });
const insufficientScope = () =>
  expect.objectContaining({
    status: 403,
    messageKey: 'scopeMissing',
    options: { headers: { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="api://${CLIENT_ID}/access_as_user"` } },
  });
const unavailable = () => expect.objectContaining({ name: 'DependencyUnavailableError', dependency: 'identityProvider' });

describe('a valid token', () => {
  it('becomes a principal: tenant, lower-cased object id, kind, roles, e-mail, name and the token itself', async () => {
    const raw = await token({ oid: OID.toUpperCase(), roles: ['LMS.Member'], preferred_username: 'Kim@Contoso.TEST', name: 'Kim' });
    expect(await createTokenValidator(settings()).validate(raw)).toEqual({
      tenantId: TENANT,
      objectId: OID,
      kind: 'user',
      roles: ['LMS.Member'],
      email: 'kim@contoso.test',
      displayName: 'Kim',
      accessToken: raw,
    });
  });

  it('may be a v1 token with the v1 issuer, for any configured audience, of any allowed tenant', async () => {
    const validator = createTokenValidator(settings());
    expect((await validator.validate(await token({ ver: '1.0', iss: issuerV1(TENANT), aud: `api://${CLIENT_ID}` }))).tenantId).toBe(TENANT);
    expect((await validator.validate(await token({ aud: 'api://teams.example.test/app' }))).kind).toBe('user');
    expect((await validator.validate(await token({ tid: SECOND_TENANT, iss: issuerV2(SECOND_TENANT) }))).tenantId).toBe(SECOND_TENANT);
  });

  it('may have expired or start within the clock skew of five minutes', async () => {
    expect(CLOCK_SKEW_SECONDS).toBe(300);
    const validator = createTokenValidator(settings());
    await expect(validator.validate(await token({ exp: now() - 200 }))).resolves.toMatchObject({ kind: 'user' });
    await expect(validator.validate(await token({ nbf: now() + 200, iat: now() + 200 }))).resolves.toMatchObject({ kind: 'user' });
    await expect(validator.validate(await token({ exp: now() - 400 }))).rejects.toEqual(refusedBecause('tokenExpired'));
    await expect(validator.validate(await token({ nbf: now() + 400, iat: undefined }))).rejects.toEqual(refusedBecause('tokenNotYetValid'));
  });

  it('needs only one of nbf and iat', async () => {
    const validator = createTokenValidator(settings());
    await expect(validator.validate(await token({ iat: undefined }))).resolves.toMatchObject({ kind: 'user' });
    await expect(validator.validate(await token({ nbf: undefined }))).resolves.toMatchObject({ kind: 'user' });
    await expect(validator.validate(await token({ nbf: undefined, iat: undefined }))).rejects.toEqual(refused());
  });

  it('is refused when issued more than the clock skew in the future', async () => {
    const validator = createTokenValidator(settings());
    await expect(validator.validate(await token({ iat: now() + 400, nbf: undefined }))).rejects.toEqual(refusedBecause('tokenNotYetValid'));
    await expect(validator.validate(await token({ iat: now() + 250, nbf: undefined }))).resolves.toMatchObject({ kind: 'user' });
  });
});

describe('the caller', () => {
  it('is a user when the token has scopes, which must include access_as_user (else a 403 naming it)', async () => {
    const validator = createTokenValidator(settings());
    expect((await validator.validate(await token({ scp: 'User.Read access_as_user' }))).kind).toBe('user');
    await expect(validator.validate(await token({ scp: 'User.Read' }))).rejects.toEqual(insufficientScope());
    await expect(validator.validate(await token({ scp: 'access_as_user_too' }))).rejects.toEqual(insufficientScope());
  });

  it('is an app with idtyp app, or without scopes (empty ones too), and has no e-mail then', async () => {
    const validator = createTokenValidator(settings());
    const app = await validator.validate(await token({ idtyp: 'app', preferred_username: 'svc@contoso.test' }));
    expect(app).toMatchObject({ kind: 'app', email: undefined });
    expect((await validator.validate(await token({ scp: undefined, roles: ['LMS.Admin'] }))).kind).toBe('app');
    expect((await validator.validate(await token({ scp: '' }))).kind).toBe('app');
    expect((await validator.validate(await token({ idtyp: 'user' }))).kind).toBe('user');
  });

  it("has the e-mail of preferred_username, else upn, else email, lower-cased; empty ones don't count", async () => {
    const validator = createTokenValidator(settings());
    const email = async (claims: Record<string, unknown>) => (await validator.validate(await token(claims))).email;
    expect(await email({ upn: 'UPN@x.test', email: 'mail@x.test' })).toBe('upn@x.test');
    expect(await email({ email: 'Mail@x.test' })).toBe('mail@x.test');
    expect(await email({ preferred_username: '', upn: 'upn@x.test' })).toBe('upn@x.test');
    expect(await email({ preferred_username: 7, email: 'mail@x.test' })).toBe('mail@x.test');
    expect(await email({})).toBeUndefined();
    expect((await validator.validate(await token({ name: '' }))).displayName).toBeUndefined();
  });

  it('has the app roles of the token, once each, and no other values', async () => {
    const validator = createTokenValidator(settings());
    const roles = async (value: unknown) => (await validator.validate(await token({ roles: value }))).roles;
    expect(await roles(['LMS.Reader', 'Unknown.Role', 'LMS.Reader', 'LMS.Admin'])).toEqual(['LMS.Reader', 'LMS.Admin']);
    expect(await roles('LMS.Admin')).toEqual([]);
    expect(await roles(undefined)).toEqual([]);
  });

  it('gets the default role when a user has none, never an app, and never one with roles', async () => {
    const validator = createTokenValidator(settings({ defaultRole: 'LMS.Reader' }));
    expect((await validator.validate(await token())).roles).toEqual(['LMS.Reader']);
    expect((await validator.validate(await token({ roles: ['Unknown.Role'] }))).roles).toEqual(['LMS.Reader']);
    expect((await validator.validate(await token({ roles: ['LMS.Admin'] }))).roles).toEqual(['LMS.Admin']);
    expect((await validator.validate(await token({ idtyp: 'app' }))).roles).toEqual([]);
  });
});

describe('a token that is refused', () => {
  it('is over 16 KiB long, or not three base64url segments', async () => {
    const validator = createTokenValidator(settings());
    const valid = await token();
    await expect(validator.validate('x'.repeat(16 * 1024 + 1))).rejects.toEqual(refused());
    await expect(validator.validate(`${valid}.${valid.split('.')[2]}`)).rejects.toEqual(refused());
    await expect(validator.validate(valid.replace(/\.[^.]*$/, '.a+b/c='))).rejects.toEqual(refused());
    await expect(validator.validate(`${valid}==`)).rejects.toEqual(refused());
  });

  it('at exactly 16 KiB is still read', async () => {
    const validator = createTokenValidator(settings());
    let raw = '';
    for (let padding = 15_500; raw.length < 16 * 1024; padding++) raw = await token({ padding: 'p'.repeat(padding) });
    for (let kid = 0; raw.length !== 16 * 1024 && kid < 4; kid++) {
      const fitted = await token({ padding: 'p'.repeat(15_000) }, { x: 'k'.repeat(kid) });
      const shortBy = 16 * 1024 - fitted.length;
      raw = await token({ padding: 'p'.repeat(15_000 + Math.floor((shortBy * 3) / 4)) }, { x: 'k'.repeat(kid) });
    }
    expect(raw.length).toBe(16 * 1024);
    await expect(validator.validate(raw)).resolves.toMatchObject({ tenantId: TENANT });
  });

  it("names no allowed tenant, or its payload can't be read, without asking the identity provider", async () => {
    const validator = createTokenValidator(settings());
    const before = server.hits.length;
    await expect(validator.validate(await token({ tid: UNKNOWN_TENANT }))).rejects.toEqual(refused());
    await expect(validator.validate(await token({ tid: 7 }))).rejects.toEqual(refused());
    const [header, , signature] = (await token()).split('.');
    for (const payload of [
      'bm90LWpzb24',
      Buffer.from('null').toString('base64url'),
      Buffer.from('5').toString('base64url'),
      Buffer.from('"x"').toString('base64url'),
    ]) {
      await expect(validator.validate(`${header}.${payload}.${signature}`)).rejects.toEqual(refused());
    }
    expect(server.hits.length).toBe(before);
  });

  it('is signed with another key, another algorithm, or not at all', async () => {
    const validator = createTokenValidator(settings());
    const other = await generateKeyPair('RS256');
    const foreign = await new SignJWT(await decoded()).setProtectedHeader({ alg: 'RS256', kid: KID }).sign(other.privateKey);
    await expect(validator.validate(foreign)).rejects.toEqual(refused());
    const sameKeyOtherAlgorithm = await new SignJWT(await decoded()).setProtectedHeader({ alg: 'RS384', kid: KID }).sign(await importJWK(privateJwk, 'RS384'));
    await expect(validator.validate(sameKeyOtherAlgorithm)).rejects.toEqual(refused());
    const [, payload] = (await token()).split('.');
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', kid: KID })).toString('base64url')}.${payload}.c2ln`;
    await expect(validator.validate(none)).rejects.toEqual(refused());
  });

  it('names no key (kid), though signed by the only key the key set holds: Entra always names it, jose would try the one key', async () => {
    const validator = createTokenValidator(settings());
    for (const kid of [undefined, '']) await expect(validator.validate(await token({}, { kid }))).rejects.toEqual(refused());
    await expect(validator.validate(await token({}, { kid: 7 }))).rejects.toEqual(refused());
    await expect(validator.validate(await token())).resolves.toMatchObject({ tenantId: TENANT });
  });

  it('has the wrong issuer for its version, or for its tenant, or no version', async () => {
    const validator = createTokenValidator(settings());
    const wrongIssuer = () => refusedBecause('tokenWrongIssuer');
    await expect(validator.validate(await token({ ver: '1.0', iss: issuerV2(TENANT) }))).rejects.toEqual(wrongIssuer());
    await expect(validator.validate(await token({ ver: '2.0', iss: issuerV1(TENANT) }))).rejects.toEqual(wrongIssuer());
    await expect(validator.validate(await token({ ver: undefined }))).rejects.toEqual(wrongIssuer());
    await expect(validator.validate(await token({ ver: '3.0' }))).rejects.toEqual(wrongIssuer());
    await expect(validator.validate(await token({ iss: issuerV2(SECOND_TENANT) }))).rejects.toEqual(wrongIssuer());
    await expect(validator.validate(await token({ iss: 'https://evil.example.test/' }))).rejects.toEqual(wrongIssuer());
  });

  it('is for another audience', async () => {
    await expect(createTokenValidator(settings()).validate(await token({ aud: 'api://other' }))).rejects.toEqual(refusedBecause('tokenWrongAudience'));
  });

  it('says why only when the signature is good: a forged token learns nothing of its claims, nor of the allowed tenants', async () => {
    const validator = createTokenValidator(settings());
    const other = await generateKeyPair('RS256');
    for (const claims of [{ exp: now() - 400 }, { nbf: now() + 400 }, { aud: 'api://other' }, { iss: 'https://evil.example.test/' }, { azp: undefined }]) {
      const forged = await new SignJWT({ ...(await decoded()), ...claims }).setProtectedHeader({ alg: 'RS256', kid: KID }).sign(other.privateKey);
      await expect(validator.validate(forged)).rejects.toEqual(refused());
    }
    // Expired and for another audience: jose checks the audience first; one reason is enough.
    await expect(validator.validate(await token({ exp: now() - 400, aud: 'api://other' }))).rejects.toEqual(refusedBecause('tokenWrongAudience'));
    // A missing claim is not a reason a genuine Entra token has: the catch-all answers it.
    await expect(validator.validate(await token({ exp: 'soon' }))).rejects.toEqual(refused());
  });

  it("puts only characters RFC 6750 allows in error_description: each reason's English message, as it is", () => {
    for (const key of TOKEN_REFUSAL_REASONS) {
      expect(translate(key, 'en', { skewMinutes: 5 })).toMatch(/^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/);
    }
  });

  it('is an ID token: it names no client app (no azp, or appid in v1), even with the app roles Entra gives the user in one', async () => {
    const validator = createTokenValidator(settings());
    // The ID token a client app signing in with the API's client id gets: same keys, issuer and audience, no scope.
    const idToken = { azp: undefined, scp: undefined, roles: ['LMS.Admin'], sub: 'pairwise-subject', preferred_username: 'kim@contoso.test' };
    // Genuine, so its 401 may say what it is: a client that sent its ID token learns to send its access token.
    const refusedIdToken = () => refusedBecause('tokenIsIdToken');
    await expect(validator.validate(await token(idToken))).rejects.toEqual(refusedIdToken());
    await expect(validator.validate(await token({ ...idToken, ver: '1.0', iss: issuerV1(TENANT), appid: undefined }))).rejects.toEqual(refusedIdToken());
    // The client claim of the other version does not stand in for it, nor does an empty one.
    await expect(validator.validate(await token({ azp: undefined, appid: CLIENT_ID }))).rejects.toEqual(refusedIdToken());
    await expect(validator.validate(await token({ ver: '1.0', iss: issuerV1(TENANT), appid: undefined, azp: CLIENT_ID }))).rejects.toEqual(refusedIdToken());
    await expect(validator.validate(await token({ azp: '' }))).rejects.toEqual(refusedIdToken());
    // Each with its client claim is an access token.
    const appOnly = { scp: undefined, roles: ['LMS.Admin'] };
    await expect(validator.validate(await token(appOnly))).resolves.toMatchObject({ kind: 'app' });
    await expect(validator.validate(await token({ ...appOnly, ver: '1.0', iss: issuerV1(TENANT) }))).resolves.toMatchObject({ kind: 'app' });
  });

  it('lacks exp or oid, or has an object id that is not a GUID', async () => {
    const validator = createTokenValidator(settings());
    await expect(validator.validate(await token({ exp: undefined }))).rejects.toEqual(refused());
    await expect(validator.validate(await token({ oid: undefined }))).rejects.toEqual(refused());
    await expect(validator.validate(await token({ oid: '' }))).rejects.toEqual(refused());
    await expect(validator.validate(await token({ oid: 'not-a-guid' }))).rejects.toEqual(refused());
    await expect(validator.validate(await token({ oid: `${OID}0` }))).rejects.toEqual(refused());
  });

  it('gets the contract 401 with its challenge', () => {
    expect(invalidToken()).toEqual(refused());
    expect(invalidToken('tokenMissing')).toEqual(refused('tokenMissing'));
    expect(invalidToken()).toBeInstanceOf(ApiError);
  });
});

async function decoded(): Promise<JWTPayload> {
  return JSON.parse(Buffer.from((await token()).split('.')[1]!, 'base64url').toString()) as JWTPayload;
}

describe('a token validated once', () => {
  afterEach(() => vi.useRealTimers());
  /** Moves the clock `seconds` on from now (Date only: the key set's age and the token's lifetime are read from it). */
  const later = (seconds: number) => vi.setSystemTime(Date.now() + seconds * 1000);
  const keySetAsked = (from: number) => server.hits.slice(from).filter((hit) => hit.path === `/${TENANT}/keys`).length;

  it('is the same caller again until it expires, and then refused as expired, as jose would refuse it', async () => {
    const validator = createTokenValidator(settings());
    const expiring = await token({ exp: now() + 60 });
    const principal = await validator.validate(expiring);
    vi.useFakeTimers({ toFake: ['Date'] });
    later(60 + CLOCK_SKEW_SECONDS - 5);
    expect(await validator.validate(expiring)).toEqual(principal);
    later(10);
    await expect(validator.validate(expiring)).rejects.toEqual(refusedBecause('tokenExpired'));
  });

  it('has its signature checked again ten minutes on, against a key set asked for again by then', async () => {
    const validator = createTokenValidator(settings());
    const lasting = await token({ exp: now() + 3_600 });
    await validator.validate(lasting);
    vi.useFakeTimers({ toFake: ['Date'] });
    const before = server.hits.length;
    later(9 * 60);
    await validator.validate(lasting);
    expect(keySetAsked(before)).toBe(0);
    later(60 + 1);
    await validator.validate(lasting);
    expect(keySetAsked(before)).toBe(1);
  });

  it('is a principal no request can change', async () => {
    const principal = await createTokenValidator(settings()).validate(await token({ roles: ['LMS.Admin'] }));
    expect(Object.isFrozen(principal) && Object.isFrozen(principal.roles)).toBe(true);
  });
});

describe('the identity provider', () => {
  it("is asked for each tenant's metadata (v1 and v2) once, and its keys once", async () => {
    const validator = createTokenValidator(settings());
    const before = server.hits.length;
    for (let index = 0; index < 3; index++) await validator.validate(await token());
    const paths = server.hits.slice(before).map((hit) => hit.path);
    expect(paths.sort()).toEqual([`/${TENANT}/.well-known/openid-configuration`, `/${TENANT}/keys`, `/${TENANT}/v2.0/.well-known/openid-configuration`]);
  });

  async function whileAnswering(path: string, answerWith: Answer, check: () => Promise<void>) {
    overrides.set(path, answerWith);
    try {
      await check();
    } finally {
      overrides.delete(path);
    }
  }

  const metadataPaths = [`/${TENANT}/v2.0/.well-known/openid-configuration`, `/${TENANT}/.well-known/openid-configuration`];

  it('that fails to answer its metadata is a dependency failure, and is asked again next time', async () => {
    for (const path of metadataPaths) {
      const validator = createTokenValidator(settings());
      await whileAnswering(
        path,
        (_request, response) => json(response, 500, {}),
        async () => {
          const failure = await validator.validate(await token()).catch((error: unknown) => error);
          expect(failure).toEqual(unavailable());
          expect(failure).toBeInstanceOf(DependencyUnavailableError);
          expect(String((failure as { cause: unknown }).cause)).toContain('answered 500');
        },
      );
      await expect(validator.validate(await token())).resolves.toMatchObject({ tenantId: TENANT });
    }
  });

  it('whose metadata lacks the issuer or the key set, or redirects, is a dependency failure', async () => {
    const good = { issuer: issuerV2(TENANT), jwks_uri: `${server.url}/${TENANT}/keys` };
    for (const body of [{ jwks_uri: good.jwks_uri }, { issuer: good.issuer }, { issuer: 7, jwks_uri: good.jwks_uri }, { issuer: good.issuer, jwks_uri: {} }]) {
      await whileAnswering(
        metadataPaths[0]!,
        (_request, response) => json(response, 200, body),
        async () => {
          const failure = await createTokenValidator(settings())
            .validate(await token())
            .catch((error: unknown) => error);
          expect(failure).toEqual(unavailable());
          expect(String((failure as { cause: unknown }).cause)).toContain('has no issuer or jwks_uri');
        },
      );
    }
    await whileAnswering(
      metadataPaths[0]!,
      (_request, response) => {
        response.writeHead(302, { location: `${server.url}/${SECOND_TENANT}/v2.0/.well-known/openid-configuration` });
        response.end();
      },
      async () => {
        await expect(createTokenValidator(settings({ allowedTenants: [TENANT] })).validate(await token())).rejects.toEqual(unavailable());
      },
    );
  });

  it('whose key set fails or is not a key set is a dependency failure, not a bad token', async () => {
    for (const answerWith of [
      (_request: IncomingMessage, response: ServerResponse) => json(response, 500, {}),
      (_request: IncomingMessage, response: ServerResponse) => json(response, 200, { keys: 'none' }),
    ]) {
      await whileAnswering(`/${TENANT}/keys`, answerWith, async () => {
        await expect(createTokenValidator(settings()).validate(await token())).rejects.toEqual(unavailable());
      });
    }
  });

  it('whose key set cannot be reached is a dependency failure', async () => {
    const down = await startSmallServer(() => undefined);
    await down.close();
    await whileAnswering(
      metadataPaths[0]!,
      (_request, response) => json(response, 200, { issuer: issuerV2(TENANT), jwks_uri: `${down.url}/keys` }),
      async () => {
        await expect(createTokenValidator(settings()).validate(await token())).rejects.toEqual(unavailable());
      },
    );
  });

  it('that is down is a dependency failure', async () => {
    const down = await startSmallServer(() => undefined);
    await down.close();
    await expect(createTokenValidator(settings({ authorityHost: down.url })).validate(await token())).rejects.toEqual(unavailable());
  });

  it("is asked at the tenant's own paths", async () => {
    const before = server.hits.length;
    await createTokenValidator(settings()).validate(await token({ tid: SECOND_TENANT, iss: issuerV2(SECOND_TENANT) }));
    expect(server.hits.slice(before).every((hit) => hit.path.startsWith(`/${SECOND_TENANT}/`))).toBe(true);
  });
});

// These run the real jose code against a provider of their own, to see what the validator asks it.
describe('token validator against the local identity provider', () => {
  let dataDir: string;
  let provider: IdentityProvider;
  const start = (port = 0) => startIdentityProvider({ port, tenants: [TENANT], clientId: CLIENT_ID, tls: inject('trustedTls'), dataDir });
  const validatorFor = (environment: Record<string, string> = {}) =>
    createTokenValidator(readAuthSettings({ AUTH_TENANT_ID: TENANT, AUTH_CLIENT_ID: CLIENT_ID, AUTH_AUTHORITY_HOST: provider.authorityHost, ...environment }));

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'validator-test-'));
    provider = await start();
  });
  afterAll(async () => {
    await provider.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('reads a verified user token into a principal', async () => {
    const token = await provider.issueToken({
      tenantId: TENANT,
      kind: 'user',
      roles: ['LMS.Member', 'Unknown.Role'],
      username: 'Kim@Contoso.test',
      name: 'Kim',
    });
    const principal = await validatorFor().validate(token);
    expect(principal).toMatchObject({ tenantId: TENANT, kind: 'user', roles: ['LMS.Member'], email: 'kim@contoso.test', displayName: 'Kim' });
  });

  it('gives a user token without roles the configured default role, but never an app token', async () => {
    const validator = validatorFor({ AUTH_DEFAULT_ROLE: 'LMS.Reader' });
    const user = await provider.issueToken({ tenantId: TENANT, kind: 'user' });
    const app = await provider.issueToken({ tenantId: TENANT, kind: 'app' });
    expect((await validator.validate(user)).roles).toEqual(['LMS.Reader']);
    expect((await validator.validate(app)).roles).toEqual([]);
    expect((await validatorFor().validate(user)).roles).toEqual([]);
  });

  it('accepts an extra configured audience such as a Teams SSO App ID URI', async () => {
    const audience = `api://teams.contoso.test/${CLIENT_ID}`;
    const token = await provider.issueToken({ tenantId: TENANT, kind: 'user', audience, roles: ['LMS.Reader'] });
    await expect(validatorFor().validate(token)).rejects.toMatchObject({ status: 401 });
    await expect(validatorFor({ AUTH_AUDIENCES: audience }).validate(token)).resolves.toMatchObject({ kind: 'user' });
  });

  it('fetches metadata and keys once, and refetches keys for an unknown kid at most once per cooldown', async () => {
    const validator = validatorFor();
    const before = { ...provider.counts };
    const token = await provider.issueToken({ tenantId: TENANT, kind: 'user' });
    for (let index = 0; index < 5; index++) await validator.validate(token);
    expect(provider.counts.metadata - before.metadata).toBe(2);
    expect(provider.counts.jwks - before.jwks).toBe(1);

    const [header, payload, signature] = token.split('.');
    const unknownKid = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(header!, 'base64url').toString()), kid: 'unknown-kid' })).toString('base64url');
    for (let index = 0; index < 5; index++) {
      await expect(validator.validate(`${unknownKid}.${payload}.${signature}`)).rejects.toBeInstanceOf(ApiError);
    }
    // The keys were fetched moments ago, within jose's cooldown: five unknown kids cause no refetch storm.
    expect(provider.counts.jwks - before.jwks).toBeLessThanOrEqual(2);
  });

  it('reports an unreachable identity provider as a dependency failure, and recovers when it is back', async () => {
    const token = await provider.issueToken({ tenantId: TENANT, kind: 'user' });
    const validator = validatorFor();
    const { port } = provider;
    await provider.close();
    try {
      await expect(validator.validate(token)).rejects.toBeInstanceOf(DependencyUnavailableError);
    } finally {
      provider = await start(port);
    }
    await expect(validator.validate(token)).resolves.toMatchObject({ tenantId: TENANT });
  });
});
