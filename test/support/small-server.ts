/**
 * A small HTTP(S) server for stand-ins a test needs for a moment (a service that never answers, an
 * attacker's key endpoint), recording every request.
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo } from 'node:net';
import { inject } from 'vitest';
import { keepIdleConnectionsOpen } from '../../local/embedded-http.js';

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
    options.https ? createHttpsServer({ cert: inject('trustedTls').cert, key: inject('trustedTls').key }, listener) : createHttpServer(listener),
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
