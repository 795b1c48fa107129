import { Agent, request } from 'node:https';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { HOME_TENANT, stack } from '../support/stack.js';

// Past Node's default keep-alive timeout (5 s), after which a server closes an idle connection.
const IDLE_MS = 6_000;

function get(url: string, agent: Agent): Promise<{ status: number; reusedSocket: boolean }> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { agent }, (response) => {
      response.resume().on('end', () => resolve({ status: response.statusCode ?? 0, reusedSocket: sent.reusedSocket }));
    });
    sent.on('error', reject).end();
  });
}

describe('the embedded parts', () => {
  // A server that closes idle connections races a client's reuse of them: a write the client cannot retry then fails.
  it.concurrent.each([
    ['database', `${stack.cosmosEndpoint}`],
    ['identity provider', `${stack.authorityHost}/${HOME_TENANT}/v2.0/.well-known/openid-configuration`],
  ])(
    'keep an idle connection open for its client to reuse: the %s',
    async (_, url) => {
      const agent = new Agent({ ca: stack.caCertPem, keepAlive: true, maxSockets: 1 });
      try {
        expect(await get(url, agent)).toEqual({ status: 200, reusedSocket: false });
        await delay(IDLE_MS);
        expect(await get(url, agent)).toEqual({ status: 200, reusedSocket: true });
      } finally {
        agent.destroy();
      }
    },
    20_000,
  );
});
