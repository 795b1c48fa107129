/**
 * One delivery attempt, to receivers on this machine (plain http to loopback, as the local stack
 * allows): what is sent, which answer counts, and what a refused URL or a silent receiver comes to.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ATTEMPT_TIMEOUT_MS, attemptDelivery } from '../../shared/webhooks/sender.js';
import { startSmallServer, type SmallServer } from '../support/small-server.js';

const servers: SmallServer[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

async function receiver(answer: (response: ServerResponse) => void = (response) => response.writeHead(204).end()) {
  const received: Received[] = [];
  const server = await startSmallServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      received.push({ method: request.method!, url: request.url!, headers: request.headers, body });
      answer(response);
    });
  });
  servers.push(server);
  return { url: server.url, received };
}

describe('a delivery attempt', () => {
  it('POSTs the body as JSON with its signed headers, its length and our user agent', async () => {
    const { url, received } = await receiver();
    const body = '{"type":"project.created","data":{"name":"Café"}}';
    const outcome = await attemptDelivery(`${url}/hooks?x=1`, { 'webhook-id': 'evt_1', 'webhook-signature': 'v1,abc' }, body, true);
    expect(outcome).toEqual({ status: 204 });
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ method: 'POST', url: '/hooks?x=1', body });
    expect(received[0]!.headers).toMatchObject({
      'webhook-id': 'evt_1',
      'webhook-signature': 'v1,abc',
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': 'LMS-Platform-Webhooks/1',
    });
  });

  it("comes to the receiver's status, whatever it is, and follows no redirect", async () => {
    for (const status of [200, 410, 500]) {
      const { url } = await receiver((response) => response.writeHead(status).end('answer'));
      expect(await attemptDelivery(url, {}, '{}', true)).toEqual({ status });
    }
    const target = await receiver();
    const { url } = await receiver((response) => response.writeHead(302, { location: `${target.url}/elsewhere` }).end());
    expect(await attemptDelivery(url, {}, '{}', true)).toEqual({ status: 302 });
    expect(target.received).toEqual([]);
  });

  it('comes to the refusal of a URL that breaks a rule now, in English, sending nothing', async () => {
    const { url, received } = await receiver();
    expect(await attemptDelivery(url, {}, '{}', false)).toEqual({ status: undefined, error: 'The webhook URL must use https.' });
    expect(await attemptDelivery('https://10.0.0.1/hooks', {}, '{}', false)).toEqual({
      status: undefined,
      error: "The webhook URL's host 10.0.0.1 is in a private network.",
    });
    expect(received).toEqual([]);
  });

  it('connects to the address checked for a host name, and speaks TLS to an https URL', async () => {
    const { url, received } = await receiver();
    expect(await attemptDelivery(url.replace('127.0.0.1', 'localhost'), {}, '{}', true)).toEqual({ status: 204 });
    expect(received).toHaveLength(1);
    const secure = await startSmallServer((_request, response) => response.writeHead(202).end(), { https: true });
    servers.push(secure);
    expect(await attemptDelivery(secure.url, {}, '{}', true)).toEqual({ status: 202 });
  });

  it('comes to the connection error when nobody listens', async () => {
    const closed = await startSmallServer(() => undefined);
    await closed.close();
    expect(await attemptDelivery(`${closed.url}/hooks`, {}, '{}', true)).toEqual({ status: undefined, error: 'ECONNREFUSED' });
  });

  it('gives up on a receiver that does not answer within 10 s', async () => {
    expect(ATTEMPT_TIMEOUT_MS).toBe(10_000);
    let answered = false;
    const { url, received } = await receiver(() => undefined);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const attempt = attemptDelivery(url, {}, '{"slow":true}', true).finally(() => (answered = true));
    // Waited for on real time: vi.waitFor would move the fake clock.
    for (const deadline = Date.now() + 5_000; received.length === 0 && Date.now() < deadline;) await new Promise((resolve) => setImmediate(resolve));
    expect(received).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(ATTEMPT_TIMEOUT_MS - 1);
    expect(answered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await attempt).toEqual({ status: undefined, error: 'no complete answer within 10 s' });
  });

  it('stops its deadline once answered, so that no late timer cuts the connection', async () => {
    const { url } = await receiver();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    expect(await attemptDelivery(url, {}, '{}', true)).toEqual({ status: 204 });
    expect(vi.getTimerCount()).toBe(0);
    const closed = await startSmallServer(() => undefined);
    await closed.close();
    expect(await attemptDelivery(closed.url, {}, '{}', true)).toMatchObject({ status: undefined });
    expect(vi.getTimerCount()).toBe(0);
  });
});
