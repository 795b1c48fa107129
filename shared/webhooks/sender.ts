/**
 * One attempt of one delivery: a POST to the subscription's URL, at an address checked just before
 * (the connection goes to it, not to a fresh lookup), answered within 10 s, redirects not followed.
 */
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { ApiError } from '../errors.js';
import { translate } from '../messages.js';
import { resolveWebhookHost, webhookUrl, type ResolvedAddress } from './url-rules.js';

export const ATTEMPT_TIMEOUT_MS = 10_000;
const USER_AGENT = 'LMS-Platform-Webhooks/1';

/** What an attempt came to: the receiver's status, or why there was none (the receiver's fault or a refused URL). */
export type AttemptOutcome = { status: number } | { status: undefined; error: string };

/** A lookup that answers with the address already checked, whatever the connection asks. */
function pinnedTo({ address, family }: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as (error: null, addresses: ResolvedAddress[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function post(url: URL, address: ResolvedAddress, headers: Record<string, string>, body: string): Promise<AttemptOutcome> {
  const options: RequestOptions = {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': USER_AGENT },
    lookup: pinnedTo(address),
    agent: false,
  };
  return new Promise((resolve) => {
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, (response) => {
      clearTimeout(deadline);
      // Only the status counts; the receiver's body is read off the connection and dropped.
      response.resume();
      resolve({ status: response.statusCode ?? 0 });
    });
    const deadline = setTimeout(() => request.destroy(new Error(`no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`)), ATTEMPT_TIMEOUT_MS);
    request.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(deadline);
      resolve({ status: undefined, error: error.code ?? error.message });
    });
    request.end(body);
  });
}

/** Sends one attempt, after checking the URL and every address its host resolves to now. */
export async function attemptDelivery(target: string, headers: Record<string, string>, body: string, allowLoopback: boolean): Promise<AttemptOutcome> {
  let url: URL;
  let addresses: ResolvedAddress[];
  try {
    url = webhookUrl(target, allowLoopback);
    addresses = await resolveWebhookHost(url, allowLoopback);
  } catch (error) {
    if (error instanceof ApiError) return { status: undefined, error: translate(error.messageKey, 'en', error.params) };
    throw error;
  }
  return post(url, addresses[0]!, headers, body);
}
