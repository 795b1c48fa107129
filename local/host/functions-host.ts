/**
 * The local Functions host, a child process of the stack (local/stack.ts): it loads the app as Azure's Node worker does,
 * serves its HTTP functions and runs its triggers as Azure's host does (docs/local-stack.md), and reports HostReady over IPC.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Readable, type Duplex } from 'node:stream';
import type { HttpHandler } from '@azure/functions';
import { startCosmosTriggers } from './cosmos-triggers.js';
import { corsPolicyFrom, handledByCors } from './cors.js';
import { listen } from '../embedded-http.js';
import { answerTo, type Answer } from './http-answers.js';
import { httpInvocation } from './http-invocation.js';
import { queueExtensionSettings, startQueueTriggers } from './queue-triggers.js';
import { invoke, loadApp, triggerOf } from './registrations.js';
import { createRouter } from './routes.js';
import { createServerWithKestrelLimits, enforceMinimumBodyRate } from './slow-clients.js';
import { startTimerTriggers } from './timer-triggers.js';

// Read whole, as Azure's host reads a request; a larger body streams, so that the app's limit can refuse it before it has all arrived.
const WHOLE_BODY_LIMIT = 64 * 1024;
// How long a stopping host waits for the invocations under way: queue messages come back after that, and a lease's page is read again.
const STOP_GRACE_MS = 10_000;
const OVERRIDE_PREFIX = 'AzureFunctionsJobHost__';
// The paths Azure's host answers itself, before any function (its reserved route guard).
const RESERVED_ROUTE = /^\/(?:admin|runtime)(?:\/|$)/i;

function log(functionName: string, level: string, message: string): void {
  const line = `[${new Date().toISOString()}] ${functionName}: ${message}`;
  if (level === 'error' || level === 'critical') console.error(line);
  else if (level === 'warning') console.warn(line);
  else if (level !== 'trace' && level !== 'debug') console.log(line);
}

/**
 * Like Azure, an app setting `AzureFunctionsJobHost__extensions__queues__visibilityTimeout` (names matched
 * without regard to case) overrides that host.json value, as a string: the queue settings read numbers from it.
 */
function withAppSettingOverrides(hostJson: Record<string, unknown>, environment: NodeJS.ProcessEnv): Record<string, unknown> {
  for (const [name, value] of Object.entries(environment)) {
    if (value === undefined || !name.startsWith(OVERRIDE_PREFIX)) continue;
    const path = name.slice(OVERRIDE_PREFIX.length).split('__');
    let target = hostJson;
    path.forEach((segment, index) => {
      const key = Object.keys(target).find((existing) => existing.toLowerCase() === segment.toLowerCase()) ?? segment;
      if (index === path.length - 1) target[key] = value;
      else target = (target[key] ??= {}) as Record<string, unknown>;
    });
  }
  return hostJson;
}

/** The headers as received, from rawHeaders: Node's `headers` keeps only the first of a repeated Authorization or Content-Type. */
const headerPairs = (raw: string[]) => raw.flatMap((name, index) => (index % 2 === 0 ? [[name, raw[index + 1]!] as [string, string]] : []));

/** The whole body, read in flowing mode: only while a body is paused does the client not count as slow (slow-clients.ts). */
function readWholeBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('end', () => resolve(Buffer.concat(chunks)));
    request.once('error', reject);
  });
}

/** None for GET and HEAD; and, as Azure's host delivers it (a known host issue), none sent without Content-Length (chunked). */
async function requestBody(request: IncomingMessage): Promise<Uint8Array | ReadableStream | undefined> {
  const declared = request.headers['content-length'];
  if (request.method === 'GET' || request.method === 'HEAD' || declared === undefined) return undefined;
  return Number(declared) <= WHOLE_BODY_LIMIT ? readWholeBody(request) : (Readable.toWeb(request) as ReadableStream);
}

/** Sends the answer in one write with a Content-Length, as Azure's host sends the app's small JSON answers. */
function send({ status, headers, body }: Answer, res: ServerResponse): void {
  if (body) headers['content-length'] = String(body.length);
  res.setHeaders(new Map(Object.entries(headers)));
  res.writeHead(status).end(body);
}

/** One line per request once answered or given up: no query (it may hold search text), and the X-Request-Id that an error's `requestId` names. */
function logRequest(req: IncomingMessage, res: ServerResponse, path: string): void {
  const started = performance.now();
  const line = (outcome: string) => {
    const milliseconds = Math.round(performance.now() - started);
    const requestId = String(res.getHeader('x-request-id') ?? '-');
    return `[${new Date().toISOString()}] ${req.method} ${path.slice(0, 200)} ${outcome} ${milliseconds} ms (request ${requestId})`;
  };
  res.once('close', () => console.log(line(res.writableFinished ? String(res.statusCode) : 'closed by the client')));
}

const appRoot = process.cwd();
const hostJson = withAppSettingOverrides(JSON.parse(await readFile(join(appRoot, 'host.json'), 'utf8')) as Record<string, unknown>, process.env) as {
  extensions?: { http?: { routePrefix?: string }; queues?: Record<string, unknown> };
};
const prefix = hostJson.extensions?.http?.routePrefix ?? 'api';
const functions = await loadApp(appRoot, process.env);
const router = createRouter(
  functions.flatMap((registration) => {
    const trigger = triggerOf(registration, 'httpTrigger');
    if (!trigger) return [];
    const { name } = registration.metadata;
    const template = [prefix, trigger.route ?? name].filter(Boolean).join('/');
    return [{ template, methods: trigger.methods ?? ['GET', 'POST'], target: { name, handler: registration.callback as HttpHandler, trigger } }];
  }),
);
// The Function App's CORS setting, applied before routing as the host's CORS middleware is.
const cors = corsPolicyFrom(process.env);

async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const base = `http://${req.headers.host ?? 'localhost'}`;
  // A Host header that names no host is refused, as Kestrel refuses it.
  if (!URL.canParse(req.url ?? '/', base)) return void res.writeHead(400).end();
  const url = new URL(req.url ?? '/', base);
  logRequest(req, res, url.pathname);
  if (handledByCors(cors, req, res)) return;
  // The host keeps /admin and /runtime for its own APIs: no function's route takes them, a catch-all included.
  if (RESERVED_ROUTE.test(url.pathname)) return void res.writeHead(404).end();
  const found = router.find(req.method ?? 'GET', url.pathname);
  if (!found) return void res.writeHead(404).end();
  const { name, handler, trigger } = found.route.target;
  enforceMinimumBodyRate(req, res);
  const body = await requestBody(req).catch(() => null);
  // The client went away mid-body: there is no one to answer.
  if (body === null) return void res.destroy();
  const headers = headerPairs(req.rawHeaders);
  const [request, context] = httpInvocation({ functionName: name, trigger, url, method: req.method ?? 'GET', headers, body, params: found.params, log });
  // The request log has each request: only a failure gets a line of its own, and, as in Azure, an empty 500.
  const answered = await invoke(context, async () => answerTo(await handler(request, context)), true);
  // A body too slow was answered 408 already.
  if (res.headersSent) return;
  if (!answered) return void res.writeHead(500).end();
  send(answered.result, res);
  // The function may answer without reading the whole body (a 413, a 401): the rest must still be read
  // off the connection, or the next request on this keep-alive socket would never be parsed.
  if (body && !req.readableEnded) req.removeAllListeners('data').resume();
}

const server = createServerWithKestrelLimits((req, res) => void serve(req, res));
// Node drops a CONNECT unanswered unless a listener takes the socket. Kestrel reads it as any other method, and the host,
// whose functions list no CONNECT, answers its empty 404 (here with the connection closed: Node's parser has let go of it).
server.on('connect', (_req, socket: Duplex) => socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'));
const port = await listen(server, Number(process.env.LOCAL_PORT ?? 0), '127.0.0.1', 'local Functions host');
const triggerHost = { registrations: functions, environment: process.env, log };
const queueTriggers = await startQueueTriggers({ ...triggerHost, settings: queueExtensionSettings(hostJson.extensions?.queues) });
const timerTriggers = await startTimerTriggers(triggerHost);
const cosmosTriggers = await startCosmosTriggers(triggerHost);
const ready = {
  port,
  routes: router.routes.map((route) => ({ name: route.target.name, methods: route.methods, template: route.template })),
  queueFunctions: queueTriggers.functions,
  timerFunctions: timerTriggers.functions,
  cosmosFunctions: cosmosTriggers.functions,
};
process.send?.(ready);
/** What the host reports over IPC once it serves. */
export type HostReady = typeof ready;

// Serves until the stack stops it (a signal, or its IPC channel closed); a signal repeated while it stops changes nothing.
await new Promise((resolve) => ['SIGTERM', 'SIGINT', 'disconnect'].forEach((event) => process.on(event, resolve)));
const stopped = [queueTriggers, timerTriggers, cosmosTriggers].map((triggers) => triggers.stop(STOP_GRACE_MS));
await Promise.all([...stopped, new Promise((resolve) => server.close(resolve))]);
process.exit(0);
