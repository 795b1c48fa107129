/**
 * The small HTTP helpers of the provider's server: JSON answers and the caching headers Entra sends with them,
 * the request body (a form of at most MAX_REQUEST_BODY_BYTES; a larger one gets Entra's malformed-request
 * error), a header's first value, and listening on a port with a plain message when the port is taken.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type https from 'node:https';
import type { AddressInfo } from 'node:net';
import { EntraError } from './entra-error.js';

const MAX_REQUEST_BODY_BYTES = 64 * 1024;

export const CACHEABLE = { 'Cache-Control': 'max-age=86400, private' };
export const NOT_CACHEABLE = { 'Cache-Control': 'no-store, no-cache', Pragma: 'no-cache' };

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  response.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
  });
  response.end(payload);
}

export async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_REQUEST_BODY_BYTES) {
      throw new EntraError(400, 'invalid_request', 9002313, 'Invalid request. Request is malformed or invalid. - The request body is too large.');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function listen(server: https.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(error.code === 'EADDRINUSE' ? new Error(`The identity provider cannot listen on ${host}:${port}: the port is in use.`, { cause: error }) : error);
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
