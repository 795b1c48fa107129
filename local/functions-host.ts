/**
 * A local Functions host for one machine. It loads the app the way Azure's Node worker does (every
 * file of package.json's `main`, with `@azure/functions-core` supplied on NODE_PATH), then serves
 * exactly the HTTP functions those files registered (their routes, methods and handlers) and runs
 * their storage queue, timer and Cosmos DB triggers (queue-triggers.ts, timer-triggers.ts,
 * cosmos-triggers.ts).
 *
 * Run as a child process of the local stack (see stack.ts); it reports `{ ready, port, routes,
 * queueFunctions, timerFunctions, cosmosFunctions }` over IPC.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import type { HttpHandler } from '@azure/functions';
import { startCosmosTriggers } from './cosmos-triggers.js';
import { queueExtensionSettings, startQueueTriggers } from './queue-triggers.js';
import { startTimerTriggers } from './timer-triggers.js';
import { appFiles } from './app-files.js';
import { corsPolicyFrom, handledByCors } from './cors.js';
import { answerTo } from './http-answers.js';
import { httpInvocation, joinedAsAzure } from './http-invocation.js';
import { enabled, registrations, runAppStartHooks, triggerOf } from './registrations.js';
import { createRouter } from './routes.js';
import { enforceMinimumBodyRate, limitSlowClients, SLOW_CLIENT_CHECK_INTERVAL_MS } from './slow-clients.js';

interface HostJson {
  extensions?: { http?: { routePrefix?: string }; queues?: Record<string, unknown> };
}

function log(functionName: string, level: string, message: string): void {
  const line = `[${new Date().toISOString()}] ${functionName}: ${message}`;
  if (level === 'error' || level === 'critical') console.error(line);
  else if (level === 'warning') console.warn(line);
  else if (level !== 'trace' && level !== 'debug') console.log(line);
}

/**
 * Every header as Azure's host passes it to the worker: lower-case names, a repeated header's values
 * joined by "," (see joinedAsAzure). Read from rawHeaders, not Node's `request.headers`, which keeps
 * only the first of a repeated Authorization or Content-Type.
 */
function headerRecord(request: IncomingMessage): Record<string, string> {
  const pairs: [string, string][] = [];
  for (let index = 0; index < request.rawHeaders.length; index += 2) pairs.push([request.rawHeaders[index]!.toLowerCase(), request.rawHeaders[index + 1]!]);
  return joinedAsAzure(pairs);
}

/**
 * A request body up to this size is read whole before the function runs, as Azure's host reads a
 * request before handing its bytes to the worker. A larger one streams through instead, so that the
 * app's own limit can refuse it before it has all arrived.
 */
const WHOLE_BODY_LIMIT = 64 * 1024;

/** The whole body; rejected if the client goes away before sending all of it. */
function readWholeBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolveBody, rejectBody) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('end', () => resolveBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    request.once('error', rejectBody);
  });
}

/**
 * What the function gets as its request body: none for GET and HEAD, the bytes of a small one, else a
 * stream. A body sent without Content-Length (chunked) reaches the function empty, as Azure's host
 * delivers it (a known host issue); Node reads it off the connection after the answer.
 */
async function requestBody(request: IncomingMessage): Promise<Uint8Array | ReadableStream | undefined> {
  const declared = request.headers['content-length'];
  if (request.method === 'GET' || request.method === 'HEAD' || declared === undefined) return undefined;
  return Number(declared) <= WHOLE_BODY_LIMIT ? readWholeBody(request) : (Readable.toWeb(request) as ReadableStream);
}

/**
 * A handler may answer without reading the whole body (a 413, a 401). The rest must still be read
 * off the connection, or the next request on this keep-alive socket would never be parsed.
 */
function discardUnreadBody(request: IncomingMessage): void {
  request.removeAllListeners('data');
  request.on('data', () => undefined);
  request.resume();
}

/** Sends the handler's answer; returns the request id it carries (X-Request-Id), for the request log. */
async function writeResponse(result: unknown, res: ServerResponse): Promise<string | undefined> {
  const answer = await answerTo(result);
  // The app's responses are small JSON documents: one write with a Content-Length, as Azure's host sends them.
  if (answer.body) answer.headers['content-length'] = String(answer.body.length);
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
  const requestId = answer.headers['x-request-id'];
  return typeof requestId === 'string' ? requestId : undefined;
}

/**
 * One line per request once its answer is sent (or the client went away): method, path (no query,
 * which may hold search text), status, duration and the request id the app answered with, so that an error's `requestId` leads
 * to its request and to the function's own lines about it.
 */
function logRequest(req: IncomingMessage, res: ServerResponse, path: string, requestId: () => string | undefined): void {
  const started = performance.now();
  const line = (outcome: string) => {
    const milliseconds = Math.round(performance.now() - started);
    return `[${new Date().toISOString()}] ${req.method} ${path.slice(0, 200)} ${outcome} ${milliseconds} ms (request ${requestId() ?? '-'})`;
  };
  res.once('finish', () => console.log(line(String(res.statusCode))));
  // A client that went away before its answer (mid-body, or while waiting) gets a line too.
  res.once('close', () => {
    if (!res.writableFinished) console.log(line('closed by the client'));
  });
}

const OVERRIDE_PREFIX = 'AzureFunctionsJobHost__';

/** App settings are strings; the host binds them to the type each setting has. */
const typed = (value: string): unknown => (/^-?\d+$/.test(value) ? Number(value) : value === 'true' ? true : value === 'false' ? false : value);

/**
 * Like Azure, an app setting `AzureFunctionsJobHost__extensions__queues__visibilityTimeout` (path
 * segments joined by `__`, names matched without regard to case) overrides that host.json value.
 */
export function withAppSettingOverrides(hostJson: Record<string, unknown>, environment: NodeJS.ProcessEnv): Record<string, unknown> {
  for (const [name, value] of Object.entries(environment)) {
    if (value === undefined || !name.startsWith(OVERRIDE_PREFIX)) continue;
    const path = name.slice(OVERRIDE_PREFIX.length).split('__');
    let target = hostJson;
    path.forEach((segment, index) => {
      const key = Object.keys(target).find((existing) => existing.toLowerCase() === segment.toLowerCase()) ?? segment;
      if (index === path.length - 1) target[key] = typed(value);
      else target = (target[key] ??= {}) as Record<string, unknown>;
    });
  }
  return hostJson;
}

export async function startFunctionsHost(appRoot: string, port: number, host: string) {
  const hostJson = withAppSettingOverrides(JSON.parse(await readFile(join(appRoot, 'host.json'), 'utf8')) as Record<string, unknown>, process.env) as HostJson;
  const prefix = hostJson.extensions?.http?.routePrefix ?? 'api';
  for (const file of await appFiles(appRoot)) await import(pathToFileURL(file).href);
  await runAppStartHooks();

  const functions = enabled(registrations(), process.env);
  const httpFunctions = functions.flatMap((registration) => {
    const trigger = triggerOf(registration, 'httpTrigger');
    if (!trigger) return [];
    const { name } = registration.metadata;
    const template = [prefix, trigger.route ?? name].filter(Boolean).join('/');
    const methods = (trigger.methods ?? ['GET', 'POST']).map((method) => method.toUpperCase());
    return [{ template, methods, target: { name, handler: registration.callback as HttpHandler, trigger } }];
  });
  const router = createRouter(httpFunctions);
  // The Function App's CORS setting, applied before routing as the host's CORS middleware is.
  const cors = corsPolicyFrom(process.env);

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? `${host}:${port}`}`);
    let requestId: string | undefined;
    logRequest(req, res, url.pathname, () => requestId);
    if (handledByCors(cors, req, res)) return;
    const found = router.find(req.method ?? 'GET', url.pathname);
    if (!found) {
      res.writeHead(404).end();
      return;
    }
    const { name, handler, trigger } = found.route.target;
    if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) enforceMinimumBodyRate(req, res);
    let body: Uint8Array | ReadableStream | undefined;
    try {
      body = await requestBody(req);
    } catch {
      // The client went away mid-body: there is no one to answer.
      res.destroy();
      return;
    }
    const [request, context] = httpInvocation({
      functionName: name,
      trigger,
      url,
      method: req.method ?? 'GET',
      headers: headerRecord(req),
      ...(body ? { body } : {}),
      params: found.params,
      log,
    });
    try {
      const result = await handler(request, context);
      // A body too slow was answered 408 by the host already.
      if (res.headersSent) return;
      requestId = await writeResponse(result, res);
      if (body && !req.readableEnded) discardUnreadBody(req);
    } catch (error) {
      // What Azure does with a handler that throws: an empty 500, and the error in the log.
      log(name, 'error', `Unhandled error: ${error instanceof Error ? error.stack : String(error)}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  }
  // Azure's host accepts 32 KB of request headers; Node's default of 16 KB would refuse large tokens before the app sees them.
  const server = createServer({ maxHeaderSize: 32 * 1024, connectionsCheckingInterval: SLOW_CLIENT_CHECK_INTERVAL_MS }, (req, res) => void serve(req, res));
  limitSlowClients(server);
  await new Promise<void>((resolveListen) => server.listen(port, host, resolveListen));
  const address = server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;

  const queueTriggers = startQueueTriggers({
    registrations: functions,
    settings: queueExtensionSettings(hostJson.extensions?.queues),
    environment: process.env,
    log,
  });
  const timerTriggers = startTimerTriggers({ registrations: functions, environment: process.env, log });
  const cosmosTriggers = await startCosmosTriggers({ registrations: functions, environment: process.env, log });
  return {
    server,
    port: actualPort,
    routes: router.routes.map((route) => ({ name: route.target.name, methods: route.methods, template: route.template })),
    queueTriggers,
    timerTriggers,
    cosmosTriggers,
  };
}

// How long a stopping host waits for the invocations under way: queue messages come back after that, and a lease's page is read again.
const STOP_GRACE_MS = 10_000;
const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const appRoot = process.env.LOCAL_APP_ROOT ?? process.cwd();
  const host = process.env.LOCAL_HOST ?? '127.0.0.1';
  const { server, port, routes, queueTriggers, timerTriggers, cosmosTriggers } = await startFunctionsHost(appRoot, Number(process.env.LOCAL_PORT ?? 0), host);
  process.send?.({
    ready: true,
    port,
    routes,
    queueFunctions: queueTriggers.functions,
    timerFunctions: timerTriggers.functions,
    cosmosFunctions: cosmosTriggers.functions,
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void Promise.all([
      queueTriggers.stop(STOP_GRACE_MS),
      timerTriggers.stop(STOP_GRACE_MS),
      cosmosTriggers.stop(STOP_GRACE_MS),
      new Promise((resolveClose) => server.close(resolveClose)),
    ]).then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
}
