import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startHostProcess } from '../../../local/stack.js';
import { stack, stackAppSettings } from '../../support/stack.js';

const ADD_IN = 'https://addin.contoso.test';
const LOCAL_PAGE = 'http://localhost:3000';
const STRANGER = 'https://stranger.example';
const CONTRACT_READABLE = ['ETag', 'Location', 'Link', 'Retry-After', 'Idempotent-Replayed', 'X-Request-Id', 'WWW-Authenticate'];

type Host = Awaited<ReturnType<typeof startHostProcess>>;

/** A host of the app with the given CORS settings, as the Function App's CORS setting gives them. */
function hostWithCors(cors: Record<string, string>, output: string[] = []): Promise<Host> {
  return startHostProcess({
    port: 0,
    environment: { ...stackAppSettings, ...cors },
    extraCaCerts: stack.caCertPath,
    hostOutput: (line) => output.push(line),
  });
}

const preflight = (baseUrl: string, origin: string, method = 'POST') =>
  fetch(`${baseUrl}/projects`, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': 'authorization,content-type,idempotency-key' },
  });

/** The CORS headers the host adds; the app itself names the headers a page may read, on every answer. */
const hostCorsHeaders = (response: Response) =>
  Object.fromEntries(
    [...response.headers].filter(([name]) => (name.startsWith('access-control-') && name !== 'access-control-expose-headers') || name === 'vary'),
  );

describe('CORS in the local host, as the Function App applies its CORS setting', () => {
  let listed: Host;
  let anyOrigin: Host;
  let withCredentials: Host;
  const base = (host: Host) => `http://127.0.0.1:${host.port}/api`;

  beforeAll(async () => {
    [listed, anyOrigin, withCredentials] = await Promise.all([
      hostWithCors({ CORS_ALLOWED_ORIGINS: `${ADD_IN},${LOCAL_PAGE}` }),
      hostWithCors({ CORS_ALLOWED_ORIGINS: '*' }),
      hostWithCors({ CORS_ALLOWED_ORIGINS: ADD_IN, CORS_SUPPORT_CREDENTIALS: 'true' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([listed, anyOrigin, withCredentials].filter(Boolean).map((host) => host.stop()));
  });

  it('answers an allowed preflight itself: 204, the origin, the methods and headers the contract allows, a max-age; no token needed', async () => {
    const response = await preflight(base(listed), ADD_IN);

    // A 204 rather than the 401 a function would give a request without a token: no function ran.
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(hostCorsHeaders(response)).toEqual({
      'access-control-allow-origin': ADD_IN,
      'access-control-allow-methods': 'GET, POST, PUT, DELETE',
      'access-control-allow-headers': 'Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, Accept-Language',
      'access-control-max-age': '600',
      vary: 'Origin',
    });
  });

  it('answers a preflight from an origin that is not allowed with a 204 and no CORS header, which the browser takes as a refusal', async () => {
    const response = await preflight(base(listed), STRANGER, 'DELETE');

    expect(response.status).toBe(204);
    expect(hostCorsHeaders(response)).toEqual({});
  });

  it("adds the allowed origin to the functions' answers, which name the headers a page may read; another origin's answers get no origin", async () => {
    const allowed = await fetch(`${base(listed)}/projects`, { headers: { Origin: LOCAL_PAGE } });
    const stranger = await fetch(`${base(listed)}/projects`, { headers: { Origin: STRANGER } });

    expect(allowed.status).toBe(401);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(LOCAL_PAGE);
    expect(allowed.headers.get('vary')).toBe('Origin');
    expect(allowed.headers.get('access-control-expose-headers')!.split(', ')).toEqual(expect.arrayContaining(CONTRACT_READABLE));
    expect(allowed.headers.get('www-authenticate')).toMatch(/^Bearer /);
    // The function still ran and answered; only the browser keeps the answer from the page.
    expect(stranger.status).toBe(401);
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('leaves requests without an Origin, and OPTIONS requests that are no preflight, to the functions', async () => {
    const withoutOrigin = await fetch(`${base(listed)}/openapi.json`);
    const notPreflight = await fetch(`${base(listed)}/projects`, { method: 'OPTIONS', headers: { Origin: ADD_IN } });

    expect(withoutOrigin.status).toBe(200);
    expect(withoutOrigin.headers.get('access-control-allow-origin')).toBeNull();
    // The app's catch-all answers: a 405 (the path takes GET and POST), with the origin, as the middleware adds it to any answer.
    expect(notPreflight.status).toBe(405);
    expect(notPreflight.headers.get('access-control-allow-origin')).toBe(ADD_IN);
  });

  it('with "*", allows every origin with "*" itself, and then the answer does not vary by origin', async () => {
    const response = await preflight(base(anyOrigin), STRANGER);
    const answer = await fetch(`${base(anyOrigin)}/projects`, { headers: { Origin: 'null' } });

    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('vary')).toBeNull();
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('with credentials, allows them for the origins listed only', async () => {
    const allowed = await preflight(base(withCredentials), ADD_IN);
    const answer = await fetch(`${base(withCredentials)}/projects`, { headers: { Origin: ADD_IN } });
    const stranger = await preflight(base(withCredentials), STRANGER);

    expect(allowed.headers.get('access-control-allow-origin')).toBe(ADD_IN);
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    expect(answer.headers.get('access-control-allow-credentials')).toBe('true');
    expect(hostCorsHeaders(stranger)).toEqual({});
  });

  it('refuses to start with "*" and credentials, a policy ASP.NET Core refuses too', async () => {
    const output: string[] = [];

    await expect(hostWithCors({ CORS_ALLOWED_ORIGINS: '*', CORS_SUPPORT_CREDENTIALS: 'true' }, output)).rejects.toThrow(/exited/);
    // The host's last words may arrive after its exit.
    await vi.waitFor(() => expect(output.join('\n')).toContain('"*" cannot be combined with credentials'));
  });

  it('answers no CORS at all without a CORS setting, as `func start` without --cors', async () => {
    const response = await preflight(stack.apiBaseUrl, ADD_IN);

    // The app's catch-all answers the OPTIONS request like any other method the path does not take.
    expect(response.status).toBe(405);
    expect(hostCorsHeaders(response)).toEqual({});
  });
});
