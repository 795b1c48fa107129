/**
 * One delivery attempt against real receivers on loopback (plain http, as the local stack allows, and
 * TLS with the certificate the test workers trust), counted from the receiver's side: what is sent,
 * which answer counts, the address check made before the attempt, one deadline for the whole exchange
 * (shortened here through the sender's own parameter), the answer's body read up to its limit,
 * connections closed when an attempt ends badly and kept for the next delivery when it ends well.
 */
import { execFileSync } from 'node:child_process';
import { constants, closeSync, openSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { keepIdleConnectionsOpen } from '../../../local/embedded-http.js';
import { ANSWER_BODY_LIMIT, ATTEMPT_TIMEOUT_MS, attemptDelivery } from '../../../shared/webhooks/sender.js';

/** Short enough for a test, long enough for a loopback exchange on a busy machine. */
const DEADLINE_MS = 1_500;
const HEADERS = { 'webhook-id': 'msg_test', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' };
const BODY = '{"type":"webhook.ping"}';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** The TLS server name the sender asked for (SNI), or false. */
  servername: string | false;
  /** 1 for the first request on its connection, 2 for the next one on the same connection, … */
  onConnection: number;
}

interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Connections made to it, and those still open. */
  connections: { made: number; open: number };
  /** Bytes of answer bodies it wrote. */
  written: number;
  close(): Promise<void>;
}

type Answer = (response: ServerResponse, request: Received, receiver: Receiver) => void;

const receivers: Receiver[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const receiver of receivers.splice(0)) await receiver.close();
});

/** A receiver that records each request once its body has arrived, then answers it (by default 204). */
async function startReceiver(
  answer: Answer = (response) => response.writeHead(204).end(),
  options: { https?: boolean; address?: string; port?: number } = {},
): Promise<Receiver> {
  const sockets = new Set<Socket>();
  const requestsOn = new WeakMap<Socket, number>();
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    requestsOn.set(socket, (requestsOn.get(socket) ?? 0) + 1);
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const received: Received = {
        method: request.method!,
        url: request.url!,
        headers: request.headers,
        body,
        servername: (socket as TLSSocket).servername ?? false,
        onConnection: requestsOn.get(socket)!,
      };
      receiver.received.push(received);
      answer(response, received, receiver);
    });
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
  const address = options.address ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, address, resolve));
  const { port } = server.address() as AddressInfo;
  const receiver: Receiver = {
    url: `${options.https ? 'https' : 'http'}://${address}:${port}`,
    port,
    received: [],
    connections: { made: 0, open: 0 },
    written: 0,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  receivers.push(receiver);
  return receiver;
}

const send = (url: string, { allowLoopback = true, deadlineMs = DEADLINE_MS } = {}) => attemptDelivery(url, HEADERS, BODY, allowLoopback, deadlineMs);
const tooLate = (deadlineMs = DEADLINE_MS) => ({ status: undefined, error: `no complete answer within ${deadlineMs / 1000} s` });

/**
 * Holds every thread of libuv's pool, which runs Node's lookups (`dns.lookup`), in an open() of a FIFO
 * that waits for a writer: a lookup started meanwhile waits as it would for a resolver that does not answer.
 */
async function holdLookups(): Promise<{ release(): Promise<void> }> {
  const folder = await mkdtemp(join(tmpdir(), 'lms-held-lookups-'));
  const fifo = join(folder, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const readers = Array.from({ length: Number(process.env.UV_THREADPOOL_SIZE) || 4 }, () => open(fifo, 'r'));
  let released: Promise<void> | undefined;
  const release = async () => {
    // A writer lets every waiting open() go; O_NONBLOCK fails at once rather than waits if none waits.
    const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    for (const reader of await Promise.all(readers)) await reader.close();
    closeSync(writer);
    await rm(folder, { recursive: true, force: true });
  };
  return { release: () => (released ??= release()) };
}

describe('a delivery attempt', () => {
  it('POSTs the body as JSON with its signed headers, its length, our user agent and the URL host', async () => {
    const to = await startReceiver();
    const body = '{"type":"project.created","data":{"name":"Café"}}';
    const outcome = await attemptDelivery(`${to.url}/hooks?x=1`, { 'webhook-id': 'evt_1', 'webhook-signature': 'v1,abc' }, body, true);
    expect(outcome).toEqual({ status: 204 });
    expect(to.received).toHaveLength(1);
    expect(to.received[0]).toMatchObject({ method: 'POST', url: '/hooks?x=1', body });
    expect(to.received[0]!.headers).toMatchObject({
      host: `127.0.0.1:${to.port}`,
      'webhook-id': 'evt_1',
      'webhook-signature': 'v1,abc',
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': 'LMS-Platform-Webhooks/1',
    });
  });

  it("comes to the receiver's status, whatever it is, and follows no redirect", async () => {
    for (const status of [200, 410, 500]) {
      const to = await startReceiver((response) => response.writeHead(status).end('answer'));
      expect(await send(to.url)).toEqual({ status });
    }
    const target = await startReceiver();
    const to = await startReceiver((response) => response.writeHead(302, { location: `${target.url}/elsewhere` }).end());
    expect(await send(to.url)).toEqual({ status: 302 });
    expect(target.received).toEqual([]);
  });

  it('comes to the refusal of a URL that breaks a rule now, in English, sending nothing', async () => {
    const to = await startReceiver();
    expect(await send(to.url, { allowLoopback: false })).toEqual({ status: undefined, error: 'The webhook URL must use https.' });
    expect(await send('https://10.0.0.1/hooks', { allowLoopback: false })).toEqual({
      status: undefined,
      error: "The webhook URL's host 10.0.0.1 is in a private network.",
    });
    expect(to.connections.made).toBe(0);
  });

  it('is refused before it connects when the host now resolves to an address the rules refuse (DNS rebinding), and nothing is sent', async () => {
    const to = await startReceiver(undefined, { https: true });
    // `localhost` passes where loopback is allowed; at this attempt the rules refuse what it resolves to.
    expect(await send(`https://localhost:${to.port}/hook`)).toEqual({ status: 204 });
    expect(await send(`https://localhost:${to.port}/hook`, { allowLoopback: false })).toEqual({
      status: undefined,
      error: "The webhook URL's host localhost is this machine (a loopback address).",
    });
    expect(to.received).toHaveLength(1);
  });

  it('connects to the address checked for a host name, naming the host in Host and, over TLS, in the server name (never an address)', async () => {
    const plain = await startReceiver();
    expect(await send(`http://localhost:${plain.port}/hook`)).toEqual({ status: 204 });
    expect(plain.received[0]!.headers.host).toBe(`localhost:${plain.port}`);
    const secure = await startReceiver((response) => response.writeHead(202).end(), { https: true });
    expect(await send(`https://localhost:${secure.port}/hook`)).toEqual({ status: 202 });
    expect(await send(`${secure.url}/hook`)).toEqual({ status: 202 });
    // The certificate names both; an address is no server name (RFC 6066), so none is sent for it.
    expect(secure.received.map((request) => request.servername)).toEqual(['localhost', false]);
  });

  it('comes to the connection error when nobody listens', async () => {
    const closed = await startReceiver();
    await closed.close();
    expect(await send(`${closed.url}/hooks`)).toEqual({ status: undefined, error: 'ECONNREFUSED' });
  });

  it('comes to no status when the receiver drops the connection in the middle of its answer', async () => {
    const to = await startReceiver((response) => {
      response.writeHead(200, { 'content-length': '1000' });
      response.write('the first bytes', () => response.socket?.destroy());
    });
    expect(await send(to.url)).toEqual({ status: undefined, error: 'the connection closed before the answer ended' });
  });

  it('gives up on a receiver that does not answer within 10 s', async () => {
    expect(ATTEMPT_TIMEOUT_MS).toBe(10_000);
    let answered = false;
    const to = await startReceiver(() => undefined);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const attempt = attemptDelivery(to.url, {}, '{"slow":true}', true).finally(() => (answered = true));
    // Waited for on real time: vi.waitFor would move the fake clock.
    for (const deadline = Date.now() + 5_000; to.received.length === 0 && Date.now() < deadline;) await new Promise((resolve) => setImmediate(resolve));
    expect(to.received).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(ATTEMPT_TIMEOUT_MS - 1);
    expect(answered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await attempt).toEqual(tooLate(ATTEMPT_TIMEOUT_MS));
  });

  it('stops its deadline once answered, so that no late timer cuts the connection', async () => {
    const to = await startReceiver();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    expect(await attemptDelivery(to.url, {}, '{}', true)).toEqual({ status: 204 });
    expect(vi.getTimerCount()).toBe(0);
    await to.close();
    expect(await attemptDelivery(to.url, {}, '{}', true)).toMatchObject({ status: undefined });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('ends at the deadline while the host name is still being looked up', async () => {
    const to = await startReceiver();
    const lookups = await holdLookups();
    // Let go in any case: a sender that waits for the lookup then gets its answer, and fails here rather than hangs.
    let letGo = false;
    const guard = setTimeout(() => {
      letGo = true;
      void lookups.release();
    }, 5_000);
    const outcome = await send(`http://localhost:${to.port}/hook`, { deadlineMs: 300 });
    clearTimeout(guard);
    await lookups.release();
    expect(outcome).toEqual(tooLate(300));
    // It ended while the lookup was still held, and the lookup's late answer led to no connection.
    expect(letGo).toBe(false);
    expect(to.connections.made).toBe(0);
  });

  it('ends at the deadline when the receiver sends its headers and then nothing, and closes the connection', async () => {
    const to = await startReceiver((response) => {
      response.writeHead(200, { 'content-length': '1000' });
      response.flushHeaders();
    });
    expect(await send(to.url)).toEqual(tooLate());
    expect(to.received).toHaveLength(1);
    await expect.poll(() => to.connections.open, { timeout: 5_000 }).toBe(0);
  });

  it('ends at the deadline when the receiver accepts the connection and never answers, and closes it', async () => {
    const to = await startReceiver(() => undefined);
    expect(await send(to.url)).toEqual(tooLate());
    await expect.poll(() => to.connections.open, { timeout: 5_000 }).toBe(0);
  });

  it('ends at the deadline on a kept connection too, closes it and sends nothing more', async () => {
    const to = await startReceiver((response, request) => {
      if (request.onConnection === 1) response.writeHead(204).end();
    });
    expect(await send(to.url)).toEqual({ status: 204 });
    expect(await send(to.url)).toEqual(tooLate());
    await expect.poll(() => to.connections.open, { timeout: 5_000 }).toBe(0);
    expect([to.received.length, to.connections.made]).toEqual([2, 1]);
  });

  it('reads an endless body only up to its limit, counts the status and closes the connection', async () => {
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const to = await startReceiver((response, _request, receiver) => {
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
    expect(await send(to.url)).toEqual({ status: 200 });
    await expect.poll(() => to.connections.open, { timeout: 5_000 }).toBe(0);
    // What the receiver wrote is what the sender read plus the kernel's socket buffers: not an endless stream.
    expect(to.written).toBeGreaterThan(ANSWER_BODY_LIMIT);
    expect(to.written).toBeLessThan(64 * 1024 * 1024);
  });

  it('keeps one TLS connection for several deliveries to the same receiver', async () => {
    const to = await startReceiver((response) => response.end('ok'), { https: true });
    for (let delivery = 0; delivery < 5; delivery++) expect(await send(`${to.url}/hook`)).toEqual({ status: 200 });
    expect(to.received).toHaveLength(5);
    expect(to.connections.made).toBe(1);
  });

  it('keeps one connection when the receiver answers with a body within the limit', async () => {
    const to = await startReceiver((response) => response.end('x'.repeat(ANSWER_BODY_LIMIT)));
    for (let delivery = 0; delivery < 3; delivery++) expect(await send(to.url)).toEqual({ status: 200 });
    expect(to.connections.made).toBe(1);
  });

  it('sends once more on a new connection when the receiver dropped the kept one (its idle timeout raced the delivery), not on another kept one', async () => {
    // A request after the first on a connection finds it dropped, as when the receiver closed it just as it was reused.
    const to = await startReceiver((response, request) => {
      if (request.onConnection > 1) return void response.socket!.destroy();
      response.writeHead(204).end();
    });
    expect(await Promise.all([send(to.url), send(to.url)])).toEqual([{ status: 204 }, { status: 204 }]);
    expect(to.connections.made).toBe(2);
    expect(await send(to.url)).toEqual({ status: 204 });
    // One kept connection tried and dropped, then a new one: not the other kept one, which may be as dead.
    expect(to.received.map((request) => request.onConnection)).toEqual([1, 1, 2, 1]);
    expect(to.connections.made).toBe(3);
  });

  it('does not send again when the receiver resets a new connection, nor after a malformed answer on a kept one', async () => {
    const resets = await startReceiver((response) => response.socket!.resetAndDestroy());
    expect(await send(resets.url)).toEqual({ status: undefined, error: 'ECONNRESET' });
    expect(resets.received).toHaveLength(1);
    const garbles = await startReceiver((response, request) => {
      if (request.onConnection === 1) return void response.writeHead(204).end();
      response.socket!.end('NOT HTTP\r\n\r\n');
    });
    expect(await send(garbles.url)).toEqual({ status: 204 });
    expect(await send(garbles.url)).toEqual({ status: undefined, error: expect.stringMatching(/^HPE_/) });
    expect(garbles.received).toHaveLength(2);
  });

  it('never reuses a kept connection for another address: a receiver on the same port of another address gets its own', async () => {
    const first = await startReceiver();
    const second = await startReceiver(undefined, { address: '127.0.0.2', port: first.port });
    for (const to of [first, second, first, second]) expect(await send(to.url)).toEqual({ status: 204 });
    expect([first.received.length, second.received.length]).toEqual([2, 2]);
    expect([first.connections.made, second.connections.made]).toEqual([1, 1]);
  });
});
