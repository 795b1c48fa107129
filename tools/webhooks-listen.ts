/**
 * `npm run -s webhooks:listen`: subscribes a receiver on this machine to every event of the running API, prints
 * each delivery with its signature checked by the Standard Webhooks library, and unsubscribes on Ctrl+C. Every
 * failure a user can fix is one line saying what to change, never a stack.
 */
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { appRootAbove } from '../shared/lib/app-root.js';
import { DEFAULT_API_PORT } from '../local/defaults.js';
import { localIdentityDataDir, readIdentityProviderInfo } from '../local/identity/provider.js';
import { SETTINGS } from '../shared/settings/catalog.js';
import { DEFAULT_TOKEN_REQUEST, requestAccessToken } from './token.js';
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from './webhook-receiver.js';

/** A failure the user can fix from its message alone. */
class ListenError extends Error {}

const DEFAULT_PORT = SETTINGS.WEBHOOKS_LISTEN_PORT.default;
const defaultApi = () => `http://localhost:${process.env.PORT || DEFAULT_API_PORT}/api`;

const USAGE = `Usage: npm run -s webhooks:listen [-- options]

Subscribes a receiver on this machine to every event of the API that \`npm start\` runs, prints each
delivery as it arrives with its signature verified, and unsubscribes on Ctrl+C.

Options:
  --port <port>   The receiver's port (default: WEBHOOKS_LISTEN_PORT, or ${DEFAULT_PORT})
  --api <url>     The API's base URL (default: http://localhost:\${PORT:-${DEFAULT_API_PORT}}/api)
  -h, --help      Show this help

It reads these settings from the environment:
  PORT                   the API's port, as \`npm start\` was given it (default ${DEFAULT_API_PORT})
  WEBHOOKS_LISTEN_PORT   the receiver's port (default ${DEFAULT_PORT})
  TOKEN                  an LMS.Admin token of the API; without it, one from the local identity
                         provider of the stack whose data is in LOCAL_DATA_DIR (default ${SETTINGS.LOCAL_DATA_DIR.default})
`;

function options(): { help: true } | { help: false; port: number; api: string } {
  let values;
  try {
    ({ values } = parseArgs({
      options: { port: { type: 'string' }, api: { type: 'string', default: defaultApi() }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (error) {
    throw new ListenError(`${(error as Error).message}\nRun with --help for the options.`);
  }
  if (values.help) return { help: true };
  const [given, name] = values.port !== undefined ? [values.port, '--port'] : [process.env.WEBHOOKS_LISTEN_PORT || DEFAULT_PORT, 'WEBHOOKS_LISTEN_PORT'];
  const port = Number(given);
  if (!/^\d+$/.test(given) || port > 65535) throw new ListenError(`${name} must be a port number (0 to 65535), not "${given}".`);
  return { help: false, port, api: values.api.replace(/\/$/, '') };
}

/** $TOKEN when exported, otherwise an LMS.Admin token of the local identity provider. */
async function adminToken(): Promise<string> {
  if (process.env.TOKEN) return process.env.TOKEN;
  try {
    const info = await readIdentityProviderInfo(localIdentityDataDir(appRootAbove(import.meta.url)));
    return await requestAccessToken(info, { ...DEFAULT_TOKEN_REQUEST, roles: ['LMS.Admin'] });
  } catch (error) {
    throw new ListenError(`${(error as Error).message} Or export TOKEN, an LMS.Admin token of the API: export TOKEN=$(npm run -s token -- --role LMS.Admin)`);
  }
}

async function listen(port: number, onDelivery: (delivery: ReceivedDelivery) => void): Promise<WebhookReceiver> {
  try {
    return await startWebhookReceiver({ port, onDelivery });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    const other = port + 10 <= 65535 ? port + 10 : port - 10;
    throw new ListenError(
      `Port ${port}, the receiver's, is in use (another webhooks:listen?): set WEBHOOKS_LISTEN_PORT (or --port) to a free port, ` +
        `e.g. WEBHOOKS_LISTEN_PORT=${other} npm run -s webhooks:listen`,
    );
  }
}

async function callApi(api: string, path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(`${api}${path}`, init);
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new ListenError(`Cannot reach the API at ${api} (${cause}): is \`npm start\` running? PORT or --api say where it listens.`);
  }
}

async function main(): Promise<void> {
  const command = options();
  if (command.help) {
    process.stdout.write(USAGE);
    return;
  }
  const { port, api } = command;
  const headers = { authorization: `Bearer ${await adminToken()}`, 'content-type': 'application/json' };
  // Listening first: a port that is taken then leaves no subscription behind. A delivery that comes before the
  // subscription's answer cannot be verified yet.
  const signing: { verifier?: Webhook } = {};
  const receiver = await listen(port, (delivery) => {
    const time = new Date(delivery.receivedAt).toISOString().slice(11, 19);
    try {
      const { type, data } = signing.verifier!.verify(delivery.body, delivery.headers as Record<string, string>) as {
        type: string;
        data: { id?: string; jobId?: string };
      };
      console.log(`${time}  ✓ ${type} ${data.id ?? data.jobId ?? ''}  (${String(delivery.headers['webhook-id'])}, signature verified)`);
    } catch (error) {
      console.log(`${time}  ✗ a delivery whose signature does not verify: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
  let subscription: { id?: string; secret?: string; message?: string };
  try {
    const body = JSON.stringify({ url: receiver.url, description: 'npm run webhooks:listen' });
    const subscribed = await callApi(api, '/webhooks', { method: 'POST', headers, body });
    subscription = (await subscribed.json()) as typeof subscription;
    if (!subscribed.ok || !subscription.id || !subscription.secret) {
      throw new ListenError(`The API refused the subscription (${subscribed.status}): ${subscription.message ?? ''}`);
    }
  } catch (error) {
    await receiver.close();
    throw error;
  }
  signing.verifier = new Webhook(subscription.secret);
  const { id } = subscription;
  console.log(`Subscribed ${id}: every event goes to ${receiver.url}. Make a change; Ctrl+C unsubscribes.`);

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    const deleted = await callApi(api, `/webhooks/${id}`, { method: 'DELETE', headers }).catch((error: Error) => error);
    await receiver.close();
    if (deleted instanceof Response && (deleted.ok || deleted.status === 404)) console.log(`\nUnsubscribed ${id}.`);
    else {
      const why = deleted instanceof Response ? deleted.status : deleted.message;
      console.error(`\nCould not unsubscribe ${id} (${why}): DELETE /api/webhooks/${id} removes it.`);
    }
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

await main().catch((error: unknown) => {
  if (!(error instanceof ListenError)) throw error;
  console.error(error.message);
  process.exit(1);
});
