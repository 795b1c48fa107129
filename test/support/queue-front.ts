/**
 * A front to a storage queue service (an Azurite of the test's own): it passes each request through and
 * records it, unless the test's `answer` answers it first, with a status of its own or by dropping the
 * connection. An app given its connection string sees its queue fail as the test says, and recover.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AzuriteQueue } from '../../local/azurite.js';
import { startSmallServer } from './small-server.js';

export interface QueueRequestRecord {
  method: string;
  /** The path under the account: `/<queue>` or `/<queue>/messages`. */
  path: string;
  query: URLSearchParams;
}

export interface QueueFront {
  connectionString: string;
  /** Every request that reached the front, answered by it or passed through. */
  requests: QueueRequestRecord[];
  /** The front's own answer to a request (a status, or `drop`), or undefined to pass it through. */
  answer: ((record: QueueRequestRecord) => number | 'drop' | undefined) | undefined;
  close(): Promise<void>;
}

export async function startQueueFront(azurite: AzuriteQueue): Promise<QueueFront> {
  const target = new URL(azurite.queueEndpoint);
  const front: Omit<QueueFront, 'connectionString' | 'close'> = { requests: [], answer: undefined };
  const server = await startSmallServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://front');
    const record = { method: request.method ?? '', path: url.pathname.slice(target.pathname.length), query: url.searchParams };
    front.requests.push(record);
    const answer = front.answer?.(record);
    if (answer === 'drop') return void response.destroy();
    if (answer !== undefined) return void request.resume().on('end', () => response.writeHead(answer).end());
    const upstream = httpRequest({ host: target.hostname, port: target.port, method: request.method, path: request.url, headers: request.headers }, (reply) => {
      response.writeHead(reply.statusCode ?? 502, reply.headers);
      reply.pipe(response);
    });
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  return Object.assign(front, {
    connectionString: azurite.connectionString.replace(/QueueEndpoint=[^;]+/, `QueueEndpoint=${server.url}${target.pathname}`),
    close: () => server.close(),
  });
}
