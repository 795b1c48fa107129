/**
 * The servers the client package's tests put around it: one between the client and the API that
 * misbehaves on cue, and another host that records whatever reaches it (a token must never).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { afterEach } from 'vitest';
import { startSmallServer, type SmallServer } from '../support/small-server.js';
import { stack } from '../support/stack.js';

/**
 * What the server between does with the n-th request (from 0): an answer of its own, the API's
 * answer ('forward'), the request passed to the API and the connection closed unanswered ('drop':
 * the answer lost after the API acted), the connection closed at once ('cut'), or no answer ever
 * ('hang': a server that accepted the request and went quiet).
 */
export type Step = { answer: number; headers?: Record<string, string>; body?: string } | 'forward' | 'drop' | 'cut' | 'hang';

export interface Seen {
  method: string;
  /** The path and query, as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

const servers: SmallServer[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function recording(step: (seen: Seen, index: number, request: IncomingMessage, response: ServerResponse) => void) {
  const seen: Seen[] = [];
  const server = await startSmallServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      step(received, seen.push(received) - 1, request, response);
    });
  });
  servers.push(server);
  return { server, seen };
}

/** A real HTTP server between the client and the API that does as `plan` says; its base URL is `baseUrl`. */
export async function between(plan: (index: number, seen: Seen) => Step): Promise<{ baseUrl: string; origin: string; seen: Seen[] }> {
  const apiOrigin = new URL(stack.apiBaseUrl).origin;
  const { server, seen } = await recording((received, index, request, response) => {
    const step = plan(index, received);
    if (step === 'hang') return;
    if (step === 'cut') return void request.socket.destroy();
    if (typeof step === 'object') return void response.writeHead(step.answer, step.headers).end(step.body ?? '');
    const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name))) as Record<
      string,
      string
    >;
    const body = received.body ? received.body : undefined;
    void fetch(`${apiOrigin}${request.url}`, { method: request.method, headers, body }).then(async (answer) => {
      const text = await answer.text();
      if (step === 'drop') return void request.socket.destroy();
      const passed = [...answer.headers].filter(([name]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name));
      response.writeHead(answer.status, Object.fromEntries(passed)).end(text);
    });
  });
  return { baseUrl: `${server.url}/api`, origin: server.url, seen };
}

/**
 * Another host on loopback (another port: another origin), where a hostile `Link` or redirect
 * points. It answers every request as a list's last page would, and records each: a test asserts it
 * saw nothing, and above all no `Authorization`.
 */
export async function anotherHost(): Promise<{ origin: string; host: string; seen: Seen[] }> {
  const { server, seen } = await recording((_received, _index, _request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end('[]');
  });
  return { origin: server.url, host: new URL(server.url).host, seen };
}

/** A list's page as the server between answers it: JSON items, and a `Link` when one is given. */
export function page(items: unknown[], link?: string): Step {
  return { answer: 200, headers: { 'content-type': 'application/json', ...(link ? { link: `<${link}>; rel="next"` } : {}) }, body: JSON.stringify(items) };
}
