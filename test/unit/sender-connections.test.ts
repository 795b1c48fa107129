/**
 * One delivery attempt against real receivers on loopback, counted from the receiver's side: the
 * address check made before the attempt, one deadline for the whole exchange (shortened here through
 * the sender's own parameter), the answer's body read up to its limit, connections closed when an
 * attempt ends badly and kept for the next delivery when it ends well.
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { keepIdleConnectionsOpen } from '../../local/idle-connections.js';
import { ANSWER_BODY_LIMIT, attemptDelivery } from '../../shared/webhooks/sender.js';

/** Short enough for a test, long enough for a loopback exchange on a busy machine. */
const DEADLINE_MS = 1_500;
const HEADERS = { 'webhook-id': 'msg_test', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' };

interface Receiver {
  port: number;
  /** Connections made to it, and those still open. */
  connections: { made: number; open: number };
  requests: number;
  /** Bytes of answer bodies it wrote. */
  written: number;
  close(): Promise<void>;
}

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});

async function startReceiver(
  answer: (response: ServerResponse, receiver: Receiver) => void,
  options: { https?: boolean; address?: string; port?: number } = {},
): Promise<Receiver> {
  const sockets = new Set<Socket>();
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    receiver.requests += 1;
    request.resume().on('end', () => answer(response, receiver));
  };
  const server = keepIdleConnectionsOpen(
    options.https ? createHttpsServer({ cert: inject('trustedTls').cert, key: inject('trustedTls').key }, handle) : createHttpServer(handle),
  );
  server.on(options.https ? 'secureConnection' : 'connection', (socket: Socket) => {
    sockets.add(socket);
    receiver.connections.made += 1;
    receiver.connections.open += 1;
    socket.on('close', () => {
      sockets.delete(socket);
      receiver.connections.open -= 1;
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.address ?? '127.0.0.1', resolve));
  const receiver: Receiver = {
    port: (server.address() as AddressInfo).port,
    connections: { made: 0, open: 0 },
    requests: 0,
    written: 0,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  receivers.push(receiver);
  return receiver;
}

const send = (url: string, allowLoopback = true) => attemptDelivery(url, HEADERS, '{"type":"webhook.ping"}', allowLoopback, DEADLINE_MS);

describe('a delivery attempt', () => {
  it('is refused before it connects when the host now resolves to an address the rules refuse (DNS rebinding), and nothing is sent', async () => {
    const to = await startReceiver((response) => response.end(), { https: true });
    // `localhost` passes where loopback is allowed; at this attempt the rules refuse what it resolves to.
    expect(await send(`https://localhost:${to.port}/hook`, true)).toEqual({ status: 200 });
    expect(await send(`https://localhost:${to.port}/hook`, false)).toEqual({
      status: undefined,
      error: "The webhook URL's host localhost is this machine (a loopback address).",
    });
    expect(to.requests).toBe(1);
  });

  it('ends at the deadline when the receiver sends its headers and then nothing, and closes the connection', async () => {
    const to = await startReceiver((response) => {
      response.writeHead(200, { 'content-length': '1000' });
      response.flushHeaders();
    });
    expect(await send(`http://127.0.0.1:${to.port}/hook`)).toEqual({ status: undefined, error: `no complete answer within ${DEADLINE_MS / 1000} s` });
    expect(to.requests).toBe(1);
    await expect.poll(() => to.connections.open, { timeout: 5_000 }).toBe(0);
  });

  it('ends at the deadline when the receiver accepts the connection and never answers, and closes it', async () => {
    const to = await startReceiver(() => undefined);
    expect(await send(`http://127.0.0.1:${to.port}/hook`)).toEqual({ status: undefined, error: `no complete answer within ${DEADLINE_MS / 1000} s` });
    await expect.poll(() => to.connections.open, { timeout: 5_000 }).toBe(0);
  });

  it('reads an endless body only up to its limit, counts the status and closes the connection', async () => {
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const to = await startReceiver((response, receiver) => {
      response.writeHead(200);
      const pour = () => {
        while (!response.destroyed) {
          receiver.written += chunk.length;
          if (!response.write(chunk)) return;
        }
      };
      response.on('drain', pour);
      pour();
    });
    expect(await send(`http://127.0.0.1:${to.port}/hook`)).toEqual({ status: 200 });
    await expect.poll(() => to.connections.open, { timeout: 5_000 }).toBe(0);
    // What the receiver wrote is what the sender read plus the kernel's socket buffers: not an endless stream.
    expect(to.written).toBeGreaterThan(ANSWER_BODY_LIMIT);
    expect(to.written).toBeLessThan(64 * 1024 * 1024);
  });

  it('keeps one TLS connection for several deliveries to the same receiver', async () => {
    const to = await startReceiver((response) => response.end('ok'), { https: true });
    for (let delivery = 0; delivery < 5; delivery++) expect(await send(`https://127.0.0.1:${to.port}/hook`)).toEqual({ status: 200 });
    expect(to.requests).toBe(5);
    expect(to.connections.made).toBe(1);
  });

  it('keeps one connection when the receiver answers with a body within the limit', async () => {
    const to = await startReceiver((response) => response.end('x'.repeat(ANSWER_BODY_LIMIT)));
    for (let delivery = 0; delivery < 3; delivery++) expect(await send(`http://127.0.0.1:${to.port}/hook`)).toEqual({ status: 200 });
    expect(to.connections.made).toBe(1);
  });

  it('sends once more on a new connection when the receiver dropped the kept one (its idle timeout raced the delivery)', async () => {
    const served = new WeakSet<object>();
    const to = await startReceiver((response) => {
      // The second request on a connection finds it dropped, as when the receiver closed it just as it was reused.
      if (served.has(response.socket!)) return void response.socket!.destroy();
      served.add(response.socket!);
      response.end();
    });
    expect(await send(`http://127.0.0.1:${to.port}/hook`)).toEqual({ status: 200 });
    expect(await send(`http://127.0.0.1:${to.port}/hook`)).toEqual({ status: 200 });
    expect(to.requests).toBe(3);
    expect(to.connections.made).toBe(2);
  });

  it('never reuses a kept connection for another address: a receiver on the same port of another address gets its own', async () => {
    const first = await startReceiver((response) => response.end());
    const second = await startReceiver((response) => response.end(), { address: '127.0.0.2', port: first.port });
    for (const address of ['127.0.0.1', '127.0.0.2', '127.0.0.1', '127.0.0.2'])
      expect(await send(`http://${address}:${first.port}/hook`)).toEqual({ status: 200 });
    expect([first.requests, second.requests]).toEqual([2, 2]);
    expect([first.connections.made, second.connections.made]).toEqual([1, 1]);
  });
});
