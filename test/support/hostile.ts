/**
 * Helpers for the hostile suite (test/hostile/): raw HTTP that does not tidy up what it is given,
 * checks every answer against the contract's rules for all responses, counts the hostile cases each
 * test tries (reported at the end of the run by test/hostile/hostile-cases-reporter.ts), starts
 * hosts of its own, and stands small servers in front of the database and the queue.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import {
  Agent as HttpAgent,
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent, createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Server } from 'node:net';
import { expect, it } from 'vitest';
import { keepIdleConnectionsOpen } from '../../local/idle-connections.js';
import { startHostProcess } from '../../local/stack.js';
import { STATUS_NAMES } from '../../shared/errors.js';
import { HOME_TENANT, OTHER_TENANT, stack, stackAppSettings } from './stack.js';

declare module 'vitest' {
  interface TaskMeta {
    /** How many hostile cases (attacks, faults, random inputs) the test tried. */
    hostileCases?: number;
    /** How many answers of the test file passed the checks every answer must pass. */
    responsesChecked?: number;
  }
}

// ------------------------------------------------------------------ counting the cases

export class CaseCounter {
  count = 0;
  add(cases = 1): void {
    this.count += cases;
  }
}

/**
 * A test whose cases are counted for the run's total. The body adds each case it tries; the count
 * goes into the test's meta, which the hostile-cases reporter sums up when the run ends.
 */
export function hostileTest(name: string, body: (cases: CaseCounter) => Promise<void>, timeout?: number): void {
  it(
    name,
    async ({ task }) => {
      const cases = new CaseCounter();
      try {
        await body(cases);
      } finally {
        task.meta.hostileCases = cases.count;
      }
      expect(cases.count, 'a hostile test tries at least one case').toBeGreaterThan(0);
    },
    timeout,
  );
}

// ------------------------------------------------------------------ raw HTTP with the contract's checks

export interface HostileResponse<T = any> {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  body: T;
}

export interface SendOptions {
  token?: string;
  /** Objects are sent as JSON; strings and buffers exactly as they are. */
  body?: unknown;
  headers?: Record<string, string | string[]>;
  /** Milliseconds before the request is abandoned (default 30 s). */
  timeoutMs?: number;
}

const keepAlive = new HttpAgent({ keepAlive: true, maxSockets: 256 });
/** Every token, key and secret the hostile tests handed to a host: none may show up in a log. */
export const secretsHandedOut = new Set<string>();
/** How many responses passed the checks every response must pass. */
export const responsesChecked = { count: 0 };

const STACK_TRACE = /\bat [\w$.<>]+ \(|\n\s+at\s|node:internal/;
const FILE_PATH = /(?:\/[\w.@+-]+){2,}\.(?:[cm]?js|ts)\b|node_modules|file:\/\/|[A-Z]:\\/;
const INTERNALS = new RegExp(
  [
    ...['cosmos', 'x-ms-', 'activityid', 'substatus', 'ECONN', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'socket hang up', 'RestError'],
    ...['\\b[A-Z][a-z]+Error\\b', 'https?://', 'jose', 'zod', 'undici', 'SELECT ', 'partition'],
  ].join('|'),
  'i',
);

/** What a 5xx body must never reveal: stack traces, file paths, SDK or database messages, secrets. */
export function expectNothingInternal(text: string): void {
  expect(text, '5xx body with a stack trace').not.toMatch(STACK_TRACE);
  expect(text, '5xx body with a file path').not.toMatch(FILE_PATH);
  expect(text, '5xx body naming internals').not.toMatch(INTERNALS);
  for (const secret of knownSecrets()) expect(text.includes(secret), '5xx body with a secret').toBe(false);
}

/** The contract's rules for every response: no caching, no sniffing, and the error shape for errors. */
export function checkResponse(response: HostileResponse, context: string): void {
  expect(response.headers['cache-control'], `Cache-Control of ${context}`).toBe('no-store');
  expect(response.headers['x-content-type-options'], `X-Content-Type-Options of ${context}`).toBe('nosniff');
  if (response.status >= 400) expectErrorShape(response, context);
  if (response.status >= 500) expectNothingInternal(response.text);
  responsesChecked.count++;
}

/** `{ error, message, status, requestId }` with the status's short name, and `details` well formed if present. */
export function expectErrorShape(response: HostileResponse, context = ''): void {
  const { body, status } = response;
  expect(typeof body, `error body of ${context}: ${response.text.slice(0, 300)}`).toBe('object');
  expect(body, `error body of ${context}`).toMatchObject({
    error: STATUS_NAMES[status],
    status,
    message: expect.stringMatching(/\S/),
    requestId: expect.any(String),
  });
  if (body.details !== undefined) {
    expect(Array.isArray(body.details), `details of ${context}`).toBe(true);
    for (const detail of body.details) expect(detail, `detail of ${context}`).toEqual({ path: expect.any(String), message: expect.any(String) });
  }
}

/** A client error in the contract's shape: one of the given statuses (any 4xx by default). */
export function expectClientError(response: HostileResponse, statuses: number | number[] = [], context = ''): void {
  const allowed = Array.isArray(statuses) ? statuses : [statuses];
  const where = `${context} → ${response.status} ${response.text.slice(0, 300)}`;
  if (allowed.length) expect(allowed, where).toContain(response.status);
  else expect(response.status >= 400 && response.status < 500, where).toBe(true);
  expectErrorShape(response, context);
}

/**
 * Sends a request with node:http, so that the path, the headers and the body reach the host exactly
 * as written (fetch would normalise `../`, refuse odd headers and add a body's Content-Type).
 */
export function send<T = any>(baseUrl: string, method: string, path: string, options: SendOptions = {}): Promise<HostileResponse<T>> {
  const url = new URL(baseUrl);
  const headers: Record<string, string | string[]> = { ...options.headers };
  if (options.token !== undefined) {
    headers.authorization = `Bearer ${options.token}`;
    secretsHandedOut.add(options.token);
  }
  let payload: Buffer | undefined;
  if (options.body !== undefined) {
    payload = Buffer.isBuffer(options.body) ? options.body : Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.length);
  }
  const fullPath = `${url.pathname.replace(/\/$/, '')}${path}`;
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: url.hostname, port: url.port, method, path: fullPath, headers, agent: keepAlive }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        if (String(response.headers['content-type']).includes('application/json') && text) {
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
        }
        const result = { status: response.statusCode ?? 0, headers: response.headers, text, body: body as T };
        try {
          checkResponse(result, `${method} ${path.slice(0, 120)}`);
          resolve(result);
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
      response.on('error', reject);
    });
    request.setTimeout(options.timeoutMs ?? 30_000, () => request.destroy(new Error(`${method} ${path.slice(0, 80)} timed out`)));
    request.on('error', reject);
    request.end(payload);
  });
}

export interface StreamedAnswer extends HostileResponse {
  /** Body bytes written before the answer came. */
  bytesSent: number;
  /** True when the answer came while the request body was still open: the host did not wait for all of it. */
  answeredBeforeTheEnd: boolean;
}

/** A JSON write with a token, announcing `declaredLength` as its size, or chunked without it. */
function bodyRequestOptions(baseUrl: string, method: string, path: string, options: { token: string; declaredLength?: number }) {
  const url = new URL(baseUrl);
  const headers: Record<string, string> = { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' };
  if (options.declaredLength !== undefined) headers['content-length'] = String(options.declaredLength);
  return { host: url.hostname, port: url.port, method, path: `${url.pathname}${path}`, headers };
}

/**
 * Sends a body that never ends: `declaredLength` announces a size (and only a little is sent);
 * without it, 64 KB chunks are streamed (chunked encoding) up to `maxBytes`. The request body is
 * never finished, so an answer proves that the host decided without reading the whole body.
 */
export function sendEndlessBody(
  baseUrl: string,
  method: string,
  path: string,
  options: { token: string; declaredLength?: number; maxBytes?: number },
): Promise<StreamedAnswer> {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const maxBytes = options.maxBytes ?? 2 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    let bytesSent = 0;
    let answered = false;
    // A fresh keep-alive connection, destroyed afterwards with its body never finished. Keep-alive
    // matters: with `Connection: close` the server would close the socket after answering, and a
    // client still writing could see EPIPE before it reads the answer.
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    const request = httpRequest({ ...bodyRequestOptions(baseUrl, method, path, options), agent }, (response) => {
      answered = true;
      const chunks: Buffer[] = [];
      response.on('data', (data: Buffer) => chunks.push(data));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const result: StreamedAnswer = {
          status: response.statusCode ?? 0,
          headers: response.headers,
          text,
          body: text ? JSON.parse(text) : text,
          bytesSent,
          answeredBeforeTheEnd: !request.writableEnded,
        };
        request.destroy();
        agent.destroy();
        try {
          checkResponse(result, `${method} ${path} with an endless body`);
          resolve(result);
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    });
    request.on('error', (error) => {
      if (!answered) reject(error);
    });
    request.setTimeout(20_000, () => request.destroy(new Error(`no answer to ${method} ${path} after ${bytesSent} bytes`)));
    const pump = () => {
      while (!answered && bytesSent < maxBytes) {
        bytesSent += chunk.length;
        if (!request.write(chunk)) {
          request.once('drain', pump);
          return;
        }
      }
    };
    if (options.declaredLength !== undefined) {
      bytesSent = 16 * 1024;
      request.write(chunk.subarray(0, bytesSent));
    } else {
      pump();
    }
  });
}

/**
 * Starts a request, sends the first part of its body, then breaks the connection: `declaredLength`
 * announces the whole size, or without it the part goes in chunked encoding. Resolves once the
 * connection is gone; there is never an answer to read.
 */
export function abandonBody(baseUrl: string, method: string, path: string, options: { token: string; part: string; declaredLength?: number }): Promise<void> {
  return new Promise((resolve) => {
    const request = httpRequest({ ...bodyRequestOptions(baseUrl, method, path, options), agent: false });
    request.on('error', () => undefined);
    request.on('close', () => resolve());
    request.flushHeaders();
    // The part reaches the host before the connection breaks, so the host has begun reading the body.
    request.write(options.part, () => setTimeout(() => request.destroy(), 50));
  });
}

/** An API on a base URL: `call('GET', '/projects', { token })`. */
export function apiAt(baseUrl: string) {
  return <T = any>(method: string, path: string, options: SendOptions = {}) => send<T>(baseUrl, method, path, options);
}

/** The shared stack's API. */
export const shared = apiAt(stack.apiBaseUrl);

/** Runs `work` over the items with at most `concurrency` at a time, in order of the items. */
export async function inBatches<I, R>(items: readonly I[], concurrency: number, work: (item: I, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!, index);
      }
    }),
  );
  return results;
}

/** The path of the next page from a response's Link header, relative to /api. */
export function nextPagePath(response: HostileResponse): string | undefined {
  const link = response.headers.link;
  const href = typeof link === 'string' ? /^<([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined;
  return href ? new URL(href).href.replace(/^.*?\/api(?=\/)/, '') : undefined;
}

/** The cursor of the next page. */
export function nextCursor(response: HostileResponse): string {
  const path = nextPagePath(response);
  const cursor = path ? new URL(path, 'http://x').searchParams.get('cursor') : null;
  if (!cursor) throw new Error(`No next page in ${JSON.stringify(response.headers.link)}`);
  return cursor;
}

// ------------------------------------------------------------------ secrets and logs

/** The fixed secrets of the shared stack; tests add their own. */
export function knownSecrets(): string[] {
  const accountKey = /AccountKey=([^;]+)/.exec(stack.storageConnectionString)?.[1];
  const privateExponent = typeof stack.privateJwk.d === 'string' ? stack.privateJwk.d : undefined;
  return [stack.cosmosKey, 'local-development-secret', accountKey, privateExponent, ...extraSecrets].filter((value): value is string => Boolean(value));
}

const extraSecrets = new Set<string>();
export function rememberSecret(secret: string): string {
  extraSecrets.add(secret);
  return secret;
}

// A JWT's header and payload as they start: base64url of `{"` twice, joined by a dot.
const JWT_SHAPED = /eyJ[\w-]{8,}\.[\w-]*/;

/**
 * No token, key or secret in a log: nothing shaped like a JWT, none of the known secrets, and no
 * long piece of any token handed to a host (a malformed token need not look like a JWT).
 */
export function expectNoSecretsInLog(log: string, label: string): void {
  const jwt = JWT_SHAPED.exec(log);
  expect(jwt ? log.slice(Math.max(0, jwt.index - 200), jwt.index + 60) : undefined, `a token in ${label}`).toBeUndefined();
  for (const secret of knownSecrets()) expect(log.includes(secret), `the secret ${secret.slice(0, 6)}… in ${label}`).toBe(false);
  for (const token of secretsHandedOut) {
    for (const piece of token.match(/[^.\s]{24,}/g) ?? []) {
      // The header of a token is shared by every token of its kind; its payload and signature are not.
      if (piece.startsWith('eyJhbGciOi') || !log.includes(piece)) continue;
      expect.fail(`a piece of a token (${piece.slice(0, 12)}…) appears in ${label}`);
    }
  }
}

/** The shared host's log so far (global setup writes it). */
export async function sharedHostLog(): Promise<string> {
  return readFile(stack.hostLogFile, 'utf8');
}

/**
 * The last test of each hostile file: no token, key or secret in the file's own host logs or in the
 * shared host's log so far, and the count of answers that passed the checks of every answer.
 */
export function logsAreClean(label: string, lines: () => string[]): void {
  it(`leave no token, key or secret in ${label} or in the shared host's log; every answer carried no-store and nosniff`, async ({ task }) => {
    expectNoSecretsInLog(lines().join('\n'), label);
    expectNoSecretsInLog(await sharedHostLog(), "the shared host's log");
    task.meta.responsesChecked = responsesChecked.count;
    expect(responsesChecked.count, 'answers checked in this file').toBeGreaterThan(0);
  });
}

// ------------------------------------------------------------------ hosts of the tests' own

export interface OwnHost {
  url: string;
  port: number;
  /** Every line the host printed. */
  lines: string[];
  /** The host's process id, found by the unique tag in its environment (Linux /proc). */
  pid(): Promise<number>;
  /** A failed expectation's message: the answer, and what the host logged for its request. */
  explain(response: HostileResponse): string;
  stop(): Promise<void>;
}

/** The settings of a host that trusts the shared identity provider and uses the shared database. */
export function sharedStackSettings(): Record<string, string> {
  return {
    ...stackAppSettings,
    AUTH_ALLOWED_TENANTS: `${HOME_TENANT},${OTHER_TENANT}`,
    AUTH_CLIENT_SECRET: rememberSecret(`hostile-client-secret-${randomUUID()}`),
    AzureWebJobsStorage: stack.storageConnectionString,
    GRAPH_BASE_URL: stack.graphBaseUrl,
    RAG_QUEUE_NAME: `hostile-${randomUUID().slice(0, 8)}`,
  };
}

const ownHosts: OwnHost[] = [];

/** Starts the app in a local Functions host of its own, with exactly these settings, its output captured. */
export async function startOwnHost(environment: Record<string, string>, port = 0): Promise<OwnHost> {
  const tag = randomUUID();
  const lines: string[] = [];
  const host = await startHostProcess({
    port,
    environment: { ...environment, HOSTILE_HOST_TAG: tag },
    extraCaCerts: stack.caCertPath,
    hostOutput: 'pipe',
    onHostOutput: (line) => lines.push(line),
  });
  let stopped = false;
  const own: OwnHost = {
    url: `http://127.0.0.1:${host.port}/api`,
    port: host.port,
    lines,
    pid: () => processWithTag(tag),
    explain(response) {
      const requestId: unknown = response.body?.requestId;
      const logged = typeof requestId === 'string' ? lines.filter((line) => line.includes(requestId)) : [];
      return [`${response.status} ${response.text.slice(0, 200)}`, ...logged].join('\n');
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await host.stop();
    },
  };
  ownHosts.push(own);
  return own;
}

/** Stops every host this test file started (a killed one is skipped: its stop would wait for an exit already past). */
export async function stopOwnHosts(): Promise<void> {
  await Promise.all(ownHosts.splice(0).map((host) => host.stop()));
}

/** Marks a host as gone without asking it to stop (after it was killed). */
export function forgetOwnHost(host: OwnHost): void {
  ownHosts.splice(ownHosts.indexOf(host), 1);
}

async function processWithTag(tag: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environment = await readFile(`/proc/${entry}/environ`, 'latin1').catch(() => '');
    if (environment.split('\0').includes(`HOSTILE_HOST_TAG=${tag}`)) return Number(entry);
  }
  throw new Error(`No process carries HOSTILE_HOST_TAG=${tag}`);
}

/** A TCP port that was free a moment ago, for a part that must come back on the same port. */
export async function freePort(): Promise<number> {
  const server: Server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// ------------------------------------------------------------------ a proxy in front of the database

export interface CosmosRequestRecord {
  method: string;
  path: string;
  /** The first 4 KB of the request body. */
  body: string;
  isQuery: boolean;
}

export interface CosmosProxy {
  endpoint: string;
  /** Every request that reached the database through the proxy. */
  requests: CosmosRequestRecord[];
  /** Decides the fate of each request: forward it, or answer it here (a 429, say). */
  intercept: ((record: CosmosRequestRecord) => { status: number; headers?: Record<string, string>; body?: unknown } | undefined) | undefined;
  close(): Promise<void>;
}

/**
 * An HTTPS proxy in front of a Cosmos DB endpoint: it records every request, can answer some itself,
 * and rewrites the account's own address in the account document, so that the SDK keeps talking to
 * the proxy instead of discovering the real endpoint.
 */
export async function startCosmosProxy(target = stack.cosmosEndpoint): Promise<CosmosProxy> {
  const targetUrl = new URL(target);
  const agent = new HttpsAgent({ ca: stack.caCertPem, keepAlive: true });
  let endpoint = '';
  const proxy: CosmosProxy = {
    endpoint: '',
    requests: [],
    intercept: undefined,
    close: () => Promise.resolve(),
  };
  const server = keepIdleConnectionsOpen(
    createHttpsServer({ cert: stack.tls.cert, key: stack.tls.key }, (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        const record: CosmosRequestRecord = {
          method: request.method ?? 'GET',
          path: decodeURIComponent(request.url ?? '/'),
          body: body.subarray(0, 4096).toString('utf8'),
          isQuery: String(request.headers['x-ms-documentdb-isquery']).toLowerCase() === 'true',
        };
        proxy.requests.push(record);
        const answer = proxy.intercept?.(record);
        if (answer) {
          const text = JSON.stringify(answer.body ?? { code: 'TooManyRequests', message: 'Request rate is large.' });
          response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(text);
          return;
        }
        forward(request, body, response);
      });
    }),
  );

  function forward(request: IncomingMessage, body: Buffer, response: ServerResponse): void {
    const upstream = httpsRequest(
      {
        host: targetUrl.hostname,
        port: targetUrl.port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, host: targetUrl.host },
        agent,
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          let text = Buffer.concat(chunks);
          if (request.method === 'GET' && (request.url === '/' || request.url === '')) {
            text = Buffer.from(text.toString('utf8').split(target).join(endpoint));
          }
          const headers = { ...answer.headers, 'content-length': String(text.length) };
          delete headers['transfer-encoding'];
          response.writeHead(answer.statusCode ?? 502, headers).end(text);
        });
      },
    );
    upstream.on('error', () => response.destroy());
    upstream.end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  proxy.endpoint = endpoint;
  proxy.close = async () => {
    agent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return proxy;
}

/** The requests that changed something (anything but reads and queries). */
export function writesIn(requests: CosmosRequestRecord[]): CosmosRequestRecord[] {
  return requests.filter((request) => request.method !== 'GET' && !request.isQuery && !request.path.endsWith('/pkranges'));
}

// ------------------------------------------------------------------ a plain HTTP server for small stand-ins

export interface SmallServer {
  url: string;
  port: number;
  hits: { method: string; path: string }[];
  close(): Promise<void>;
}

/** A tiny HTTP(S) server answering with `handle`, recording every request. */
export async function startSmallServer(
  handle: (request: IncomingMessage, response: ServerResponse) => void,
  options: { https?: boolean } = {},
): Promise<SmallServer> {
  const hits: SmallServer['hits'] = [];
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    hits.push({ method: request.method ?? '', path: request.url ?? '' });
    handle(request, response);
  };
  const server = keepIdleConnectionsOpen(
    options.https ? createHttpsServer({ cert: stack.tls.cert, key: stack.tls.key }, listener) : createHttpServer(listener),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.https ? 'https://localhost' : 'http://127.0.0.1'}:${port}`,
    port,
    hits,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
