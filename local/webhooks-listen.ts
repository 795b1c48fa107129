/**
 * `npm run -s webhooks:listen`: subscribes a receiver on this machine to every event of the running
 * API, prints each delivery as it arrives with its signature checked by the Standard Webhooks
 * library, and unsubscribes on Ctrl+C. The token comes from $TOKEN (`npm run -s token -- --role LMS.Admin`).
 */
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { DEFAULT_API_PORT } from './defaults.js';
import { startWebhookReceiver, type ReceivedDelivery } from './webhook-receiver.js';

const DEFAULT_RECEIVER_PORT = 7073;

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: String(DEFAULT_RECEIVER_PORT) },
    api: { type: 'string', default: `http://localhost:${process.env.PORT || DEFAULT_API_PORT}/api` },
  },
});
const token = process.env.TOKEN;
if (!token) {
  console.error('Set TOKEN first, to an LMS.Admin token:  TOKEN=$(npm run -s token -- --role LMS.Admin)');
  process.exit(2);
}
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

const port = Number(values.port);
const url = `http://127.0.0.1:${port}/hook`;
const subscribed = await fetch(`${values.api}/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url, description: 'npm run webhooks:listen' }) });
const subscription = (await subscribed.json()) as { id?: string; secret?: string; message?: string };
if (!subscribed.ok || !subscription.id || !subscription.secret) {
  console.error(`The API refused the subscription (${subscribed.status}): ${subscription.message ?? ''}`);
  process.exit(1);
}
const unsubscribe = () => fetch(`${values.api}/webhooks/${subscription.id}`, { method: 'DELETE', headers }).catch(() => undefined);
const verifier = new Webhook(subscription.secret);

function show(delivery: ReceivedDelivery): void {
  const time = new Date(delivery.receivedAt).toISOString().slice(11, 19);
  try {
    const { type, data } = verifier.verify(delivery.body, delivery.headers as Record<string, string>) as {
      type: string;
      data: { id?: string; jobId?: string };
    };
    console.log(`${time}  ✓ ${type} ${data.id ?? data.jobId ?? ''}  (${String(delivery.headers['webhook-id'])}, signature verified)`);
  } catch (error) {
    console.log(`${time}  ✗ a delivery whose signature does not verify: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const receiver = await startWebhookReceiver({ port, onDelivery: show }).catch(async (error: unknown) => {
  await unsubscribe();
  throw error;
});
console.log(`Subscribed ${subscription.id}: every event goes to ${receiver.url}. Make a change; Ctrl+C unsubscribes.`);

async function stop(): Promise<void> {
  await unsubscribe();
  await receiver.close();
  console.log(`\nUnsubscribed ${subscription.id}.`);
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
