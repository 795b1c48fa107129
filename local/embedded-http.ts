/**
 * What the local servers share: listening with a taken port told in plain words, closing with their
 * keep-alive connections, idle connections kept open, request bodies, and the one way they send a JSON answer.
 */
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on `port` (0: a free one) and resolves with the port; a port in use rejects with a message naming `what`. */
export async function listen(server: Server, port: number, host: string, what: string): Promise<number> {
  // events.once rejects with the 'error' that comes instead of 'listening'.
  await once(server.listen(port, host), 'listening').catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE') throw error;
    throw Object.assign(new Error(`The ${what} cannot listen on ${host}:${port}: the port is in use.`, { cause: error }), { code: error.code });
  });
  return (server.address() as AddressInfo).port;
}

/** Stops the server, closing its keep-alive connections, which would otherwise hold close() open. */
export function close(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeAllConnections();
  });
}

/** The body as text; past `limitBytes`, `tooLarge()` is thrown instead. */
export async function readBody(request: IncomingMessage, limitBytes = Infinity, tooLarge = () => new Error('The request body is too large.')): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A JSON answer in one write, with its length, and the content type the service names it with. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  contentType = 'application/json; charset=utf-8',
): void {
  const payload = JSON.stringify(body);
  response.writeHead(status, { ...headers, 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) });
  response.end(payload);
}

/**
 * Makes an embedded server keep idle connections open, as Azure's services do for minutes. Node's default
 * closes them after 5 s, racing a client's reuse of a pooled connection on a busy machine: the client's
 * write then fails with ECONNRESET, which clients do not retry (the Cosmos SDK retries only reads).
 */
export function keepIdleConnectionsOpen<S extends { keepAliveTimeout: number }>(server: S): S {
  server.keepAliveTimeout = 0;
  return server;
}
