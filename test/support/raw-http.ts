/**
 * Raw HTTP for the hostile suite: requests that reach the host exactly as written (paths, headers and
 * bodies are not tidied up), every answer checked against the contract's rules for all responses,
 * bodies that never end or break off, and paging helpers.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { expect } from 'vitest';
import { STATUS_NAMES } from '../../shared/errors.js';
import { knownSecrets, responsesChecked, secretsHandedOut } from './secrets-and-logs.js';

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
  // A path from the root, resolved as a client resolves it.
  return href ? new URL(href, 'http://api.invalid').href.replace(/^.*?\/api(?=\/)/, '') : undefined;
}

/** The cursor of the next page. */
export function nextCursor(response: HostileResponse): string {
  const path = nextPagePath(response);
  const cursor = path ? new URL(path, 'http://x').searchParams.get('cursor') : null;
  if (!cursor) throw new Error(`No next page in ${JSON.stringify(response.headers.link)}`);
  return cursor;
}
