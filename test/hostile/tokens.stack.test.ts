/**
 * Hostile tokens against a host of this file's own, whose database is reached only through a
 * recording proxy and whose identity provider counts what it is asked: each bad token must be a 401
 * (or, for a valid token without a known role, a 403) and must cost no database call at all.
 * test/api/auth.stack.test.ts checks the 401s against the shared stack; this file adds the attacks it
 * lacks and the proof that nothing reaches the database.
 */
import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  sign as cryptoSign,
  constants,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import type { JWTPayload } from 'jose';
import { generate as generateCertificate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../local/identity/provider.js';
import { startCosmosProxy, writesIn, type CosmosProxy } from '../support/cosmos-proxy.js';
import { hostileTest, type CaseCounter } from '../support/hostile-cases.js';
import { startOwnHost, stopOwnHosts, type OwnHost } from '../support/own-hosts.js';
import { apiAt, expectClientError, type HostileResponse } from '../support/raw-http.js';
import { logsAreClean, rememberSecret } from '../support/secrets-and-logs.js';
import { startSmallServer, type SmallServer } from '../support/small-server.js';
import { CLIENT_ID, HOME_TENANT, OTHER_TENANT, stack } from '../support/stack.js';

let provider: IdentityProvider;
let cosmos: CosmosProxy;
let host: OwnHost;
let attacker: SmallServer;
let call: ReturnType<typeof apiAt>;
let realKey: KeyObject;

const attackerRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const attackerEc = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const attackerJwk = { ...attackerRsa.publicKey.export({ format: 'jwk' }), kid: 'attacker-key', use: 'sig', alg: 'RS256' };

beforeAll(async () => {
  provider = await startIdentityProvider({ port: 0, tenants: [HOME_TENANT, OTHER_TENANT], clientId: CLIENT_ID, tls: stack.tls });
  realKey = createPrivateKey({ key: provider.privateJwk as import('node:crypto').JsonWebKey, format: 'jwk' });
  rememberSecret(String(provider.privateJwk.d));
  cosmos = await startCosmosProxy();
  // The attacker's own key set and certificate, for tokens whose header points here.
  attacker = await startSmallServer(
    (request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(request.url?.startsWith('/jwks') ? { keys: [attackerJwk] } : {}));
    },
    { https: true },
  );
  host = await startOwnHost({
    AUTH_TENANT_ID: HOME_TENANT,
    AUTH_ALLOWED_TENANTS: `${HOME_TENANT},${OTHER_TENANT}`,
    AUTH_CLIENT_ID: CLIENT_ID,
    AUTH_AUTHORITY_HOST: provider.authorityHost,
    AUTH_CLIENT_SECRET: rememberSecret(`hostile-client-secret-${randomUUID()}`),
    COSMOS_CONNECTION: cosmos.connectionString,
    COSMOS_DATABASE: 'lms',
    // The shared host relays the shared database's changes; a second relay would compete for its lease.
    'AzureWebJobs.changes-relay.Disabled': 'true',
    AzureWebJobsStorage: stack.storageConnectionString,
    CURSOR_SIGNING_KEY: stack.cursorSigningKey,
    RAG_QUEUE_NAME: `hostile-tokens-${randomUUID().slice(0, 8)}`,
  });
  call = apiAt(host.url);
});

afterAll(async () => {
  await stopOwnHosts();
  await Promise.all([provider?.close(), cosmos?.close(), attacker?.close()]);
});

// ------------------------------------------------------------------ crafting tokens

const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url');
const json = (value: unknown) => b64(JSON.stringify(value));
const now = () => Math.floor(Date.now() / 1000);
const v1Issuer = (tenant: string) => `https://sts.windows.net/${tenant}/`;
const v2Issuer = (tenant: string) => `${provider.authorityHost}/${tenant}/v2.0`;
const USER_OID = '3f2c9a1e-5b7d-4c2e-8a9f-0e1d2c3b4a59';

/** A v1 user token's claims, valid now for the home tenant, with the role that may do everything. */
function claims(overrides: JWTPayload = {}): JWTPayload {
  return {
    aud: `api://${CLIENT_ID}`,
    iss: v1Issuer(HOME_TENANT),
    iat: now(),
    nbf: now(),
    exp: now() + 3600,
    ver: '1.0',
    appid: CLIENT_ID,
    tid: HOME_TENANT,
    oid: USER_OID,
    upn: 'hostile@contoso.test',
    scp: 'access_as_user',
    roles: ['LMS.Admin'],
    ...overrides,
  };
}

function without(claim: string, overrides: JWTPayload = {}): JWTPayload {
  const { [claim]: _removed, ...rest } = claims(overrides);
  return rest;
}

type Algorithm = 'RS256' | 'RS384' | 'RS512' | 'PS256' | 'ES256' | 'HS256';

function signature(algorithm: Algorithm, input: string, key: KeyObject | Buffer): Buffer {
  const data = Buffer.from(input);
  switch (algorithm) {
    case 'RS256':
    case 'RS384':
    case 'RS512':
      return cryptoSign(`sha${algorithm.slice(2)}`, data, key);
    case 'PS256':
      return cryptoSign('sha256', data, { key: key as KeyObject, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
    case 'ES256':
      return cryptoSign('sha256', data, { key: key as KeyObject, dsaEncoding: 'ieee-p1363' });
    case 'HS256':
      return createHmac('sha256', key).update(data).digest();
  }
}

/** Signs exactly the header and payload given (objects as JSON, buffers as they are): jose would refuse to write most of these. */
function craft(
  options: { header?: Record<string, unknown> | Buffer; payload?: JWTPayload | Buffer; algorithm?: Algorithm; key?: KeyObject | Buffer } = {},
): string {
  const algorithm = options.algorithm ?? 'RS256';
  const header = options.header ?? {};
  const headerPart = Buffer.isBuffer(header) ? b64(header) : json({ alg: algorithm, typ: 'JWT', kid: provider.signingKid, ...header });
  const payloadPart = Buffer.isBuffer(options.payload) ? b64(options.payload) : json(options.payload ?? claims());
  const input = `${headerPart}.${payloadPart}`;
  return `${input}.${b64(signature(algorithm, input, options.key ?? realKey))}`;
}

const publicPem = () => createPublicKey(realKey).export({ type: 'spki', format: 'pem' }) as string;
const publicJwkText = () => JSON.stringify(createPublicKey(realKey).export({ format: 'jwk' }));

async function attackerCertificate(): Promise<string> {
  const pems = await generateCertificate([{ name: 'commonName', value: 'login.microsoftonline.com' }], { keySize: 2048, algorithm: 'sha256' });
  return new X509Certificate(pems.cert).raw.toString('base64');
}

// ------------------------------------------------------------------ checking the answers

function expectUnauthorized(response: HostileResponse, context: string): void {
  expectClientError(response, 401, context);
  expect(response.headers['www-authenticate'], context).toMatch(/^Bearer\b.*error="invalid_token"/);
}

/** A valid token without the scope users call the API with: a 403 that names the scope. */
function expectInsufficientScope(response: HostileResponse, context: string): void {
  expectClientError(response, 403, context);
  expect(response.headers['www-authenticate'], context).toBe(`Bearer error="insufficient_scope", scope="api://${CLIENT_ID}/access_as_user"`);
}

/** Sends the Authorization header to a read, a write and a delete: each refused (a 401 unless told), and no request reaches the database. */
async function expectRefusedBeforeTheDatabase(
  cases: CaseCounter,
  authorization: string | string[],
  pathSuffix = '',
  expectRefused: (response: HostileResponse, context: string) => void = expectUnauthorized,
): Promise<void> {
  const before = cosmos.requests.length;
  const headers = { authorization };
  const attempts: [string, string, unknown][] = [
    ['GET', `/projects?limit=1${pathSuffix}`, undefined],
    ['POST', `/projects${pathSuffix ? `?${pathSuffix.slice(1)}` : ''}`, { name: 'Should never exist', owner: 'intruder@contoso.test' }],
    ['DELETE', `/projects/PRJ-1001${pathSuffix ? `?${pathSuffix.slice(1)}` : ''}`, undefined],
  ];
  for (const [method, path, body] of attempts) {
    const response = await call(method, path, { headers, ...(body ? { body } : {}) });
    expectRefused(response, `${method} ${path}`);
    cases.add();
  }
  for (const value of [authorization].flat()) rememberSecret(value.replace(/^Bearer\s+/i, ''));
  expect(cosmos.requests.slice(before), 'requests that reached the database').toEqual([]);
}

const bearer = (token: string) => `Bearer ${token}`;

// ------------------------------------------------------------------ the tests

describe('the recorder in front of the database', () => {
  it('sees the calls of a valid token, so an empty record below means no call was made', async () => {
    const before = cosmos.requests.length;
    const response = await call('GET', '/projects?limit=1', { token: craft() });
    expect(response.status, response.text).toBe(200);
    expect(cosmos.requests.length).toBeGreaterThan(before);
  });
});

describe('hostile tokens: each refused (a 401 invalid_token challenge; a 403 naming the scope a valid token lacks), and no database call', () => {
  const attacks: [string, () => string | Promise<string>][] = [
    // The algorithm
    ['with alg none and an empty signature', () => `${json({ alg: 'none', typ: 'JWT' })}.${json(claims())}.`],
    ['with alg none and a signature copied from a valid token', () => `${json({ alg: 'none', typ: 'JWT' })}.${json(claims())}.${craft().split('.')[2]}`],
    ['with alg "None" in another case', () => `${json({ alg: 'None', typ: 'JWT' })}.${json(claims())}.${craft().split('.')[2]}`],
    ['signed with HS256 using the RSA public key (PEM) as the secret', () => craft({ algorithm: 'HS256', key: Buffer.from(publicPem()) })],
    ['signed with HS256 using the public JWK as the secret', () => craft({ algorithm: 'HS256', key: Buffer.from(publicJwkText()) })],
    ['signed with RS384 by the real key', () => craft({ algorithm: 'RS384' })],
    ['signed with RS512 by the real key', () => craft({ algorithm: 'RS512' })],
    ['signed with PS256 by the real key', () => craft({ algorithm: 'PS256' })],
    ['signed with ES256 by an attacker key', () => craft({ algorithm: 'ES256', key: attackerEc.privateKey })],
    [
      'whose header says RS256 over an RS384 signature of the real key',
      () => {
        const [header, payload] = craft().split('.');
        return `${header}.${payload}.${b64(signature('RS384', `${header}.${payload}`, realKey))}`;
      },
    ],
    // The key
    ['with an unknown kid, signed by the real key', () => craft({ header: { kid: 'no-such-key' } })],
    ['with a path-traversal kid', () => craft({ header: { kid: '../../../../etc/passwd' }, key: attackerRsa.privateKey })],
    ['with a 4 KB kid', () => craft({ header: { kid: 'k'.repeat(4096) }, key: attackerRsa.privateKey })],
    ['with a kid that is not a string', () => craft({ header: { kid: { $ne: null } }, key: attackerRsa.privateKey })],
    ['without a kid, signed by an attacker key', () => craft({ header: { kid: undefined }, key: attackerRsa.privateKey })],
    ["with jku pointing at the attacker's key set", () => craft({ header: { kid: 'attacker-key', jku: `${attacker.url}/jwks` }, key: attackerRsa.privateKey })],
    ["with jku pointing at the attacker's key set under the real kid", () => craft({ header: { jku: `${attacker.url}/jwks` }, key: attackerRsa.privateKey })],
    [
      "with x5u pointing at the attacker's certificate",
      () => craft({ header: { kid: 'attacker-key', x5u: `${attacker.url}/x5u` }, key: attackerRsa.privateKey }),
    ],
    ["with the attacker's key embedded as jwk", () => craft({ header: { kid: 'attacker-key', jwk: attackerJwk }, key: attackerRsa.privateKey })],
    [
      "with the attacker's key embedded as jwk under the real kid",
      () => craft({ header: { jwk: { ...attackerJwk, kid: provider.signingKid } }, key: attackerRsa.privateKey }),
    ],
    [
      "with the attacker's certificate embedded as x5c",
      async () => craft({ header: { kid: 'attacker-key', x5c: [await attackerCertificate()] }, key: attackerRsa.privateKey }),
    ],
    [
      'with an unknown crit header, signed by the real key',
      () => craft({ header: { crit: ['urn:hostile:must-understand'], 'urn:hostile:must-understand': true } }),
    ],
    ['with a crit header naming a parameter it does not carry', () => craft({ header: { crit: ['exp'] } })],
    // Lifetime
    ['expired beyond the 5-minute clock skew', () => craft({ payload: claims({ iat: now() - 4000, nbf: now() - 4000, exp: now() - 400 }) })],
    ['not valid before a time beyond the clock skew (nbf in the future)', () => craft({ payload: claims({ nbf: now() + 600, exp: now() + 4000 }) })],
    ['without exp', () => craft({ payload: without('exp') })],
    ['with exp as a string', () => craft({ payload: claims({ exp: String(now() + 3600) as unknown as number }) })],
    [
      'without nbf and iat',
      () => {
        const { nbf: _nbf, iat: _iat, ...rest } = claims();
        return craft({ payload: rest });
      },
    ],
    // Audience
    ['issued for Microsoft Graph', () => craft({ payload: claims({ aud: 'https://graph.microsoft.com' }) })],
    ['issued for another app', () => craft({ payload: claims({ aud: `api://${randomUUID()}` }) })],
    ['whose audience only differs by a trailing slash', () => craft({ payload: claims({ aud: `api://${CLIENT_ID}/` }) })],
    // Issuer and tenant
    ['issued by another tenant', () => craft({ payload: claims({ iss: v1Issuer(randomUUID()) }) })],
    [
      'of a tenant that is not allowed, consistent in tid and iss',
      () => {
        const tenant = randomUUID();
        return craft({ payload: claims({ tid: tenant, iss: v1Issuer(tenant) }) });
      },
    ],
    ['whose tid does not match its issuer', () => craft({ payload: claims({ tid: OTHER_TENANT }) })],
    ['whose tid is not a GUID', () => craft({ payload: claims({ tid: 'contoso.onmicrosoft.com', iss: v1Issuer('contoso.onmicrosoft.com') }) })],
    [
      'whose tid is the home tenant in upper case',
      () => craft({ payload: claims({ tid: HOME_TENANT.toUpperCase(), iss: v1Issuer(HOME_TENANT.toUpperCase()) }) }),
    ],
    ['of version 2.0 with a v1 issuer', () => craft({ payload: claims({ ver: '2.0', aud: CLIENT_ID }) })],
    ['of version 1.0 with a v2 issuer', () => craft({ payload: claims({ iss: v2Issuer(HOME_TENANT) }) })],
    ['without ver', () => craft({ payload: without('ver') })],
    [
      "with the real Entra ID's v2 issuer instead of the configured authority's",
      () => craft({ payload: claims({ ver: '2.0', aud: CLIENT_ID, iss: `https://login.microsoftonline.com/${HOME_TENANT}/v2.0` }) }),
    ],
    // Size and format
    ['over 16 KB', () => craft({ payload: claims({ padding: 'x'.repeat(12 * 1024) }) })],
    [
      're-encoded in standard base64 with padding',
      () =>
        craft({ payload: claims({ name: 'ÿÿÿ??>>' }) })
          .split('.')
          .map((part) => Buffer.from(part, 'base64url').toString('base64'))
          .join('.'),
    ],
    ['with a segment that is not base64 at all', () => `${json({ alg: 'RS256', kid: provider.signingKid })}.%%%not*base64%%%.${craft().split('.')[2]}`],
    ['with five segments (JWE-shaped)', () => `${craft()}.${b64('iv')}.${b64('tag')}`],
    ['with two segments', () => craft().split('.').slice(0, 2).join('.')],
    ['whose header is truncated JSON', () => craft({ header: Buffer.from(`{"alg":"RS256","kid":"${provider.signingKid}"`) })],
    ['whose header is a JSON array', () => craft({ header: Buffer.from('["RS256"]') })],
    ['whose payload is truncated JSON, signed by the real key', () => craft({ payload: Buffer.from(JSON.stringify(claims()).slice(0, -1)) })],
    ['whose payload is JSON null, signed by the real key', () => craft({ payload: Buffer.from('null') })],
    ['whose payload is a JSON array, signed by the real key', () => craft({ payload: Buffer.from(`[${JSON.stringify(claims())}]`) })],
    [
      'whose payload is not UTF-8, signed by the real key',
      () => {
        const text = JSON.stringify(claims({ name: 'MARK' }));
        const [before, after] = text.split('MARK');
        return craft({ payload: Buffer.concat([Buffer.from(before!), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(after!)]) });
      },
    ],
    [
      'whose header is not UTF-8, signed by the real key',
      () => {
        const text = JSON.stringify({ alg: 'RS256', typ: 'MARK', kid: provider.signingKid });
        const [before, after] = text.split('MARK');
        return craft({ header: Buffer.concat([Buffer.from(before!), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(after!)]) });
      },
    ],
    [
      'with a Latin-1 byte inside a segment',
      () => {
        const [header, payload, sig] = craft().split('.');
        return `${header}.${payload!.slice(0, 10)}\u00e9${payload!.slice(10)}.${sig}`;
      },
    ],
    [
      'with a tab inside a segment',
      () => {
        const [header, payload, sig] = craft().split('.');
        return `${header}.${payload!.slice(0, 10)}\t${payload!.slice(10)}.${sig}`;
      },
    ],
  ];

  for (const [label, make] of attacks) {
    hostileTest(`a token ${label}`, async (cases) => {
      await expectRefusedBeforeTheDatabase(cases, bearer(await make()));
    });
  }

  // Valid tokens, but without the scope: a 403 naming it, as RFC 6750 has it, and still no database call.
  const scopes: [string, string][] = [
    ['only contains access_as_user as a prefix', 'access_as_user_x'],
    ['only contains access_as_user as a suffix', 'xaccess_as_user'],
    ['is access_as_user in another case', 'Access_As_User'],
    ['is a comma-separated list around access_as_user', 'User.Read,access_as_user'],
  ];
  for (const [label, scp] of scopes) {
    hostileTest(`a token whose scope ${label} (${scp})`, async (cases) => {
      await expectRefusedBeforeTheDatabase(cases, bearer(craft({ payload: claims({ scp }) })), '', expectInsufficientScope);
    });
  }

  hostileTest('a valid token in the access_token query parameter, with or without the header', async (cases) => {
    const valid = craft();
    await expectRefusedBeforeTheDatabase(cases, [], `&access_token=${valid}`);
    await expectRefusedBeforeTheDatabase(cases, bearer(valid), `&access_token=${valid}`);
    await expectRefusedBeforeTheDatabase(cases, bearer(valid), '&access_token=');
  });

  hostileTest('two Authorization headers, one valid', async (cases) => {
    await expectRefusedBeforeTheDatabase(cases, [bearer(craft()), bearer('x.y.z')]);
  });

  hostileTest('two tokens in one Authorization header', async (cases) => {
    await expectRefusedBeforeTheDatabase(cases, `Bearer ${craft()} ${craft()}`);
  });

  it("never fetched anything from the attacker's jku or x5u addresses", () => {
    expect(attacker.hits).toEqual([]);
  });
});

describe('unknown key ids and the identity provider', () => {
  hostileTest('25 tokens with distinct unknown kids at once cost at most one JWKS refetch', async (cases) => {
    // A token with the real kid loads the key set, if nothing has yet.
    expect((await call('GET', '/projects?limit=1', { token: craft() })).status).toBe(200);
    const before = { ...provider.counts };
    const responses = await Promise.all(
      Array.from({ length: 25 }, () => call('GET', '/projects?limit=1', { token: craft({ header: { kid: randomUUID() } }) })),
    );
    for (const response of responses) expectUnauthorized(response, 'unknown kid');
    cases.add(responses.length);
    expect(provider.counts.metadata - before.metadata, 'metadata fetches').toBe(0);
    // A second burst within jose's 30 s cooldown fetches nothing more: one refetch at most for both bursts,
    // whichever of them the cooldown's end may fall between.
    for (const response of await Promise.all(
      Array.from({ length: 25 }, () => call('GET', '/projects?limit=1', { token: craft({ header: { kid: randomUUID() } }) })),
    )) {
      expectUnauthorized(response, 'unknown kid, second burst');
    }
    cases.add(25);
    expect(provider.counts.jwks - before.jwks, 'JWKS fetches for both bursts').toBeLessThanOrEqual(1);
  });
});

describe('role names in another case: a valid token with no known role is a 403, and nothing is done', () => {
  const roleVariants: [string, unknown][] = [
    ['lms.admin', ['lms.admin']],
    ['LMS.ADMIN', ['LMS.ADMIN']],
    ['" LMS.Admin" (leading space)', [' LMS.Admin']],
    ['LMS.Admin as a string instead of a list', 'LMS.Admin'],
  ];

  for (const [label, roles] of roleVariants) {
    hostileTest(`a user token whose only role is ${label} may not create, change, delete or read, and writes nothing but its caller record`, async (cases) => {
      const oid = randomUUID();
      const owner = `role-case-${oid.slice(0, 8)}@contoso.test`;
      const token = craft({ payload: claims({ roles: roles as string[], oid, upn: owner }) });
      const before = cosmos.requests.length;
      const attempts: [string, string, unknown][] = [
        ['POST', '/projects', { name: 'Role case', owner }],
        ['PUT', '/projects/PRJ-1001', { name: 'Renamed by a wrong-case role' }],
        ['DELETE', '/projects/PRJ-1001', undefined],
        ['POST', '/tasks', { projectId: 'PRJ-1001', title: 'Role case' }],
        ['POST', '/rag/index', {}],
        ['GET', '/projects?limit=1', undefined],
      ];
      for (const [method, path, body] of attempts) {
        const response = await call(method, path, { token, ...(body ? { body } : {}) });
        expectClientError(response, 403, `${method} ${path}`);
        cases.add();
      }
      // The only writes are the caller's own record (the contract records every authenticated caller).
      for (const write of writesIn(cosmos.requests.slice(before))) {
        const isCallerRecord =
          write.path.endsWith(`/docs/${oid}`) || (write.method === 'POST' && write.body.includes(`"id":"${oid}"`) && write.body.includes('"type":"user"'));
        expect(isCallerRecord, `${write.method} ${write.path} ${write.body.slice(0, 200)}`).toBe(true);
      }
      const admin = craft();
      expect((await call('GET', `/projects?owner=${encodeURIComponent(owner)}`, { token: admin })).body).toEqual([]);
    });
  }

  hostileTest('an app-only token whose only role is lms.admin is a 403 without any database call', async (cases) => {
    const appToken = craft({ payload: { ...without('scp', { idtyp: 'app', roles: ['lms.admin'], oid: randomUUID() }), upn: undefined } });
    const before = cosmos.requests.length;
    for (const [method, path, body] of [
      ['POST', '/projects', { name: 'Daemon', owner: 'daemon@contoso.test' }],
      ['GET', '/projects?limit=1', undefined],
      ['DELETE', '/projects/PRJ-1001', undefined],
    ] as const) {
      expectClientError(await call(method, path, { token: appToken, ...(body ? { body } : {}) }), 403, `${method} ${path}`);
      cases.add();
    }
    expect(cosmos.requests.slice(before)).toEqual([]);
  });
});

logsAreClean("the token tests' host log", () => host.lines);
