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
import { translate } from '../messages.js';
import { resolveWebhookHost, webhookUrl, type ResolvedAddress } from './url-rules.js';

export const ATTEMPT_TIMEOUT_MS = 10_000;
/** How much of a receiver's answer is read: only its status counts, and past this the connection is closed. */
export const ANSWER_BODY_LIMIT = 64 * 1024;
/** How long a connection waits for the next delivery to the same receiver (under the 5 s after which Node's servers close). */
const IDLE_CONNECTION_MS = 4_000;
const USER_AGENT = 'LMS-Platform-Webhooks/1';

/** What an attempt came to: the receiver's status, or why there was none (the receiver's fault or a refused URL). */
export type AttemptOutcome = { status: number } | { status: undefined; error: string };

/**
 * Connections are kept for the next delivery to the same receiver: in Azure a new connection per
 * delivery uses up the outbound SNAT ports. Each connection is made to the checked address itself (its
 * `host`; no lookup happens), and the agents pool connections by host, port and TLS server name, so a
 * pooled connection is reused only for the same checked address.
 */
const keepAlive: AgentOptions = { keepAlive: true, timeout: IDLE_CONNECTION_MS, scheduling: 'lifo' };
const agents = { 'http:': new HttpAgent(keepAlive), 'https:': new HttpsAgent(keepAlive) };

const tooLate = (deadlineMs: number) => `no complete answer within ${deadlineMs / 1000} s`;

/** The promise, or the deadline's rejection if that comes first (a lookup cannot be cancelled, only left behind). */
function beforeDeadline<T>(promise: Promise<T>, deadline: AbortSignal): Promise<T> {
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(deadline.reason as Error);
    if (deadline.aborted) onAbort();
    else deadline.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => deadline.removeEventListener('abort', onAbort));
}

interface Exchange {
  url: URL;
  address: ResolvedAddress;
  headers: Record<string, string>;
  body: string;
  deadline: AbortSignal;
  deadlineMs: number;
}

function post(exchange: Exchange, mayRetryOnFreshConnection = true): Promise<AttemptOutcome> {
  const { url, address, headers, body, deadline, deadlineMs } = exchange;
  const name = url.hostname.replace(/^\[|\]$/g, '');
  const options: RequestOptions = {
    method: 'POST',
    host: address.address,
    family: address.family,
    port: url.port || (url.protocol === 'https:' ? 443 : 80),
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
    agent: agents[url.protocol as keyof typeof agents],
  };
  if (deadline.aborted) return Promise.resolve({ status: undefined, error: tooLate(deadlineMs) });
  return new Promise((resolve) => {
    let settled = false;
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(options, (response) => {
      const status = response.statusCode ?? 0;
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        // Enough: the status is all that counts, and the rest is not read.
        if (read > ANSWER_BODY_LIMIT) settle({ status }, true);
      });
      // The whole answer within the deadline: the connection goes back to the pool for the next delivery.
      response.on('end', () => settle({ status }, false));
      response.on('error', (error: NodeJS.ErrnoException) => settle({ status: undefined, error: error.code ?? error.message }, true));
      response.on('close', () => settle({ status: undefined, error: 'the connection closed before the answer ended' }, true));
    });
    const onDeadline = () => settle({ status: undefined, error: tooLate(deadlineMs) }, true);
    function settle(outcome: AttemptOutcome | Promise<AttemptOutcome>, closeConnection: boolean): void {
      if (settled) return;
      settled = true;
      deadline.removeEventListener('abort', onDeadline);
      // A connection whose answer did not end cleanly cannot carry another delivery: it goes with the attempt.
      if (closeConnection) request.destroy();
      resolve(outcome);
    }
    deadline.addEventListener('abort', onDeadline, { once: true });
    request.on('error', (error: NodeJS.ErrnoException) => {
      // A kept connection the receiver closed meanwhile: once more, on a new connection, within the same deadline.
      if (mayRetryOnFreshConnection && request.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE'))
        return settle(post(exchange, false), true);
      settle({ status: undefined, error: error.code ?? error.message }, true);
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
  const deadline = AbortSignal.timeout(deadlineMs);
  let url: URL;
  let addresses: ResolvedAddress[];
  try {
    url = webhookUrl(target, allowLoopback);
    addresses = await beforeDeadline(resolveWebhookHost(url, allowLoopback), deadline);
  } catch (error) {
    if (error instanceof ApiError) return { status: undefined, error: translate(error.messageKey, 'en', error.params) };
    if (deadline.aborted) return { status: undefined, error: tooLate(deadlineMs) };
    throw error;
  }
  return post({ url, address: addresses[0]!, headers, body, deadline, deadlineMs });
}
