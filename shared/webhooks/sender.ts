/**
 * One attempt of one delivery: a POST to the subscription's URL, at an address checked just before
 * (the connection goes to it, not to a fresh lookup), redirects not followed. One deadline covers the
 * whole exchange (the lookup, the connection, TLS, the answer's headers and body); the body is read
 * up to a limit and dropped; a connection whose answer did not end cleanly is closed with the attempt.
 */
import { Agent as HttpAgent, request as httpRequest, type AgentOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import { isIP } from 'node:net';
import { ApiError } from '../errors.js';
import { translate } from '../messages/catalog.js';
import { bareHost, resolveWebhookHost, webhookUrl, type ResolvedAddress } from './url-rules.js';

export const ATTEMPT_TIMEOUT_MS = 10_000;
/** How much of a receiver's answer is read: only its status counts, and past this the connection is closed. */
export const ANSWER_BODY_LIMIT = 64 * 1024;
/** How long a connection waits for the next delivery to the same receiver (under the 5 s after which Node's servers close). */
const IDLE_CONNECTION_MS = 4_000;
const USER_AGENT = 'LMS-Platform-Webhooks/1';
/** What a kept connection the receiver closed just as it was reused comes to. */
const DEAD_KEPT_CONNECTION = new Set(['ECONNRESET', 'EPIPE']);

/** What an attempt came to: the receiver's status, or why there was none (the receiver's fault or a refused URL). */
export type AttemptOutcome = { status: number } | { status: undefined; error: string };

/**
 * Connections are kept for the next delivery to the same receiver: in Azure a new connection per
 * delivery uses up the outbound SNAT ports. Each connection is made to the checked address itself (its
 * `host`; no lookup happens), and the agents pool connections by host, port and TLS server name, so a
 * pooled connection is reused only for the same checked address.
 */
const keepAlive: AgentOptions = { keepAlive: true, timeout: IDLE_CONNECTION_MS };
const transports = {
  'http:': { request: httpRequest, agent: new HttpAgent(keepAlive) },
  'https:': { request: httpsRequest, agent: new HttpsAgent(keepAlive) },
};

const tooLate = (deadlineMs: number): AttemptOutcome => ({ status: undefined, error: `no complete answer within ${deadlineMs / 1000} s` });

/** The promise's value, or undefined if the deadline comes first (a lookup cannot be cancelled, only left behind). */
function beforeDeadline<T>(promise: Promise<T>, deadline: AbortSignal): Promise<T | undefined> {
  return Promise.race([promise, new Promise<undefined>((resolve) => deadline.addEventListener('abort', () => resolve(undefined)))]);
}

interface Exchange {
  url: URL;
  address: ResolvedAddress;
  headers: Record<string, string>;
  body: string;
  deadline: AbortSignal;
  deadlineMs: number;
}

function post(exchange: Exchange, newConnection = false): Promise<AttemptOutcome> {
  const { url, address, headers, body, deadline, deadlineMs } = exchange;
  const transport = transports[url.protocol as keyof typeof transports];
  const name = bareHost(url);
  const options: RequestOptions = {
    method: 'POST',
    host: address.address,
    family: address.family,
    // Empty for the scheme's own port, which the agent knows.
    port: url.port,
    path: `${url.pathname}${url.search}`,
    // The certificate is checked against the URL's host name (SNI too), not the address connected to.
    servername: isIP(name) ? '' : name,
    headers: {
      ...headers,
      host: url.host,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': USER_AGENT,
    },
    // A one-off agent makes a new connection, and keeps it for nothing else.
    agent: newConnection ? false : transport.agent,
    // At the deadline Node destroys the request, whatever it waits for: the connection, the answer's headers or body.
    signal: deadline,
  };
  return new Promise((resolve) => {
    const failure = (reason: string) => (deadline.aborted ? tooLate(deadlineMs) : { status: undefined, error: reason });
    // Destroying the request closes its connection, unless its answer ended cleanly: Node has then put the
    // connection back in the pool already. Later calls change nothing: the outcome is the first one.
    const settle = (outcome: AttemptOutcome | Promise<AttemptOutcome>) => {
      request.destroy();
      resolve(outcome);
    };
    const request = transport.request(options, (response) => {
      const status = response.statusCode ?? 0;
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        // Enough: the status is all that counts, and the rest is not read.
        if (read > ANSWER_BODY_LIMIT) settle({ status });
      });
      response.on('end', () => settle({ status }));
      response.on('close', () => settle(failure('the connection closed before the answer ended')));
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      // A kept connection the receiver closed meanwhile: once more, on a new connection, within the same deadline.
      if (request.reusedSocket && DEAD_KEPT_CONNECTION.has(error.code!)) return settle(post(exchange, true));
      settle(failure(error.code ?? error.message));
    });
    request.end(body);
  });
}

/**
 * Sends one attempt, after checking the URL and every address its host resolves to now, all within
 * `deadlineMs` (the contract's 10 s; a test may give less).
 */
export async function attemptDelivery(
  target: string,
  headers: Record<string, string>,
  body: string,
  allowLoopback: boolean,
  deadlineMs = ATTEMPT_TIMEOUT_MS,
): Promise<AttemptOutcome> {
  const deadline = new AbortController();
  // Cleared when the attempt ends: no timer outlives it.
  const timer = setTimeout(() => deadline.abort(), deadlineMs);
  try {
    const url = webhookUrl(target, allowLoopback);
    const addresses = await beforeDeadline(resolveWebhookHost(url, allowLoopback), deadline.signal);
    if (!addresses) return tooLate(deadlineMs);
    return await post({ url, address: addresses[0]!, headers, body, deadline: deadline.signal, deadlineMs });
  } catch (error) {
    if (error instanceof ApiError) return { status: undefined, error: translate(error.messageKey, 'en', error.params) };
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
