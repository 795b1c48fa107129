/**
 * A storage front that can go down: every request refused while it is down, passed through to the
 * stack's Azurite when it is up. An app given its connection string sees its queues fail and recover.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stack } from './stack.js';

export interface SwitchableQueue {
  connectionString: string;
  down: boolean;
  close(): Promise<void>;
}

export async function switchableQueue(): Promise<SwitchableQueue> {
  const target = new URL(/QueueEndpoint=([^;]+)/.exec(stack.storageConnectionString)![1]!);
  const state = { down: false };
  const server: Server = createServer((request, response) => {
    if (state.down) return void response.destroy();
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    connectionString: stack.storageConnectionString.replace(/QueueEndpoint=[^;]+/, `QueueEndpoint=http://127.0.0.1:${port}${target.pathname}`),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  });
}
