/**
 * The local host cuts slow clients as Azure's Functions host (Kestrel) does: a body that trickles in
 * below the minimum rate, and headers that never finish, get 408 and a closed connection instead of
 * holding a request open for minutes. Raw sockets control the pace.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { api, stack, token } from '../../support/stack.js';

interface Trickled {
  /** What the host sent back before it closed the connection. */
  answer: string;
  /** The bytes written before the connection closed, of all there were to write. */
  sent: number;
  total: number;
}

/** Writes `head` at once, then `rest` one byte a second, until the host closes the connection. */
function trickle(head: string, rest: string): Promise<Trickled> {
  const { hostname, port } = new URL(stack.apiBaseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname === 'localhost' ? '127.0.0.1' : hostname, port: Number(port) });
    let answer = '';
    let sent = 0;
    let writer: NodeJS.Timeout | undefined;
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
    socket.on('connect', () => {
      socket.write(head);
      writer = setInterval(() => {
        if (sent < rest.length && !socket.destroyed) socket.write(rest[sent++]!);
      }, 1000);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(writer);
      resolve({ answer, sent, total: rest.length });
    });
    setTimeout(() => reject(new Error('the host kept the connection open')), 80_000).unref();
  });
}

describe('slow clients', () => {
  it('a body trickled at a byte a second gets 408 and a closed connection, and nothing is stored', { timeout: 90_000 }, async () => {
    const admin = await token({ roles: ['LMS.Admin'] });
    const name = `Trickled ${crypto.randomUUID()}`;
    const body = JSON.stringify({ name });
    const head =
      `POST /api/projects HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${admin}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;

    const { answer, sent, total } = await trickle(head, body);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(sent).toBeLessThan(total);

    const listed = await api<{ name: string }[]>('GET', `/projects?q=${encodeURIComponent(name)}`, { token: admin });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([]);
    // The host goes on serving.
    expect((await api('GET', '/projects?limit=1', { token: admin })).status).toBe(200);
  });

  it('headers that never finish get 408 and a closed connection', { timeout: 90_000 }, async () => {
    const { answer, sent, total } = await trickle('GET /api/projects HTTP/1.1\r\nHost: localhost\r\nX-Slow: ', 'x'.repeat(45));
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(sent).toBeLessThan(total);
  });
});
