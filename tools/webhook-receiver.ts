/**
 * A webhook receiver on loopback: it keeps every delivery it gets and answers each with the status
 * its `answer` gives (200 by default). The local listener (`npm run webhooks:listen`), the tests and
 * the bench receive with it.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { close, listen } from '../local/embedded-http.js';

export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedDelivery[];
  /** Resolves with the deliveries once `enough` says so; rejects after `timeoutMs`. */
  waitFor(enough: (received: ReceivedDelivery[]) => boolean, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

export interface ReceiverOptions {
  port?: number;
  /** The status for a delivery (or a promise of one: a receiver that takes its time). */
  answer?: (delivery: ReceivedDelivery, index: number) => number | Promise<number>;
  /** Told of every delivery as it arrives. */
  onDelivery?: (delivery: ReceivedDelivery) => void;
  /** Serve https at `https://localhost:<port>/hook` with this key pair, instead of plain http. */
  tls?: { cert: string; key: string };
}

export async function startWebhookReceiver(options: ReceiverOptions = {}): Promise<WebhookReceiver> {
  const received: ReceivedDelivery[] = [];
  const waiting = new Set<() => void>();
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const delivery = { headers: request.headers, body, receivedAt: Date.now() };
      const index = received.push(delivery) - 1;
      options.onDelivery?.(delivery);
      for (const check of waiting) check();
      void Promise.resolve(options.answer?.(delivery, index) ?? 200).then((status) => {
        if (!response.destroyed) response.writeHead(status).end();
      });
    });
  };
  const server = options.tls ? createHttpsServer(options.tls, handle) : createServer(handle);
  const port = await listen(server, options.port ?? 0, '127.0.0.1', 'webhook receiver');
  return {
    url: options.tls ? `https://localhost:${port}/hook` : `http://127.0.0.1:${port}/hook`,
    received,
    waitFor(enough, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!enough(received)) return;
          waiting.delete(check);
          clearTimeout(timer);
          resolve(received);
        };
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(new Error(`The receiver got ${received.length} deliveries, not what was awaited, in ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.add(check);
        check();
      });
    },
    close: () => close(server),
  };
}
