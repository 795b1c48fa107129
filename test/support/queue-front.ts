/**
 * A front to a storage queue service (an Azurite of the test's own): it passes each request through and
 * records it, unless the test's `answer` answers it first, with a status of its own or by dropping the
 * connection. An app given its connection string sees its queue fail as the test says, and recover.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { QueueClient } from '@azure/storage-queue';
import type { AzuriteQueue } from '../../local/storage/azurite.js';
import { startSmallServer } from './small-server.js';

export interface QueueRequestRecord {
  method: string;
  /** The path under the account: `/<queue>` or `/<queue>/messages`. */
  path: string;
  query: URLSearchParams;
  body: string;
  /** The status it was answered with (by the front or by the queue service), once answered. */
  status?: number;
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
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://front');
      const body = Buffer.concat(chunks);
      const record: QueueRequestRecord = {
        method: request.method ?? '',
        path: url.pathname.slice(target.pathname.length),
        query: url.searchParams,
        body: body.toString('utf8'),
      };
      front.requests.push(record);
      const answer = front.answer?.(record);
      if (answer === 'drop') return void response.destroy();
      if (answer !== undefined) return void response.writeHead((record.status = answer)).end();
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: request.method, path: request.url, headers: request.headers },
        (reply) => {
          record.status = reply.statusCode ?? 502;
          response.writeHead(record.status, reply.headers);
          reply.pipe(response);
        },
      );
      upstream.on('error', () => response.destroy());
      upstream.end(body);
    });
  });
  return Object.assign(front, {
    connectionString: azurite.connectionString.replace(/QueueEndpoint=[^;]+/, `QueueEndpoint=${server.url}${target.pathname}`),
    close: () => server.close(),
  });
}

export interface TakenMessage<T> {
  message: T;
  delaySeconds: number;
}

/** The messages the queue service took on `queue` through the front, in order: each one's content (the app's base64 JSON) and delay. */
export function messagesTaken<T>(front: QueueFront, queue: string): TakenMessage<T>[] {
  return front.requests
    .filter((record) => record.method === 'POST' && record.path === `/${queue}/messages` && record.status === 201)
    .map((record) => ({
      message: JSON.parse(Buffer.from(/<MessageText>([^<]*)<\/MessageText>/.exec(record.body)![1]!, 'base64').toString('utf8')) as T,
      delaySeconds: Number(record.query.get('visibilitytimeout') ?? 0),
    }));
}

/** The messages a trigger of the queue would be handed now, base64 JSON as host.json says. */
export async function visibleMessages(queue: QueueClient): Promise<unknown[]> {
  const { peekedMessageItems } = await queue.peekMessages({ numberOfMessages: 32 });
  return peekedMessageItems.map((item) => JSON.parse(Buffer.from(item.messageText, 'base64').toString('utf8')) as unknown);
}
