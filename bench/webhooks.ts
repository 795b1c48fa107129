/**
 * Webhooks on the local stack: how long an event takes from a change's 201 to its receiver, how many
 * deliveries per second reach ten subscriptions, and a create's requests per second with and without
 * a subscription, in turns (the event rides in the create's one batch: test/performance/round-trips
 * counts it; its hand-over runs in the background on the same instance, and is part of both figures).
 */
import autocannon from 'autocannon';
import { LOCAL_HOME_TENANT_ID } from '../local/defaults.js';
import { startStack } from '../local/stack.js';
import { startWebhookReceiver, type WebhookReceiver } from '../tools/webhook-receiver.js';
import { CONCURRENT_REQUESTS, median } from './figures.js';

const LATENCY_EVENTS = 200;
const BURST_EVENTS = 1_000;
const SUBSCRIPTIONS = 10;
const TURNS = 4;
const TURN_SECONDS = 3;

export interface WebhookFigures {
  latencyMs: { p50: number; p99: number; events: number };
  burst: { events: number; subscriptions: number; seconds: number; deliveriesPerSecond: number; lost: number; duplicates: number };
  create: { withoutSubscription: number; withSubscription: number; ratio: number };
}

const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * share))]!;

export async function benchWebhooks(): Promise<WebhookFigures> {
  const settings = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(AUTH_|COSMOS_|GRAPH_|EMBEDDINGS_|RAG_|WEBHOOKS_|AzureWebJobs)/.test(name)),
  );
  const stack = await startStack({ apiPort: 0, identityProviderPort: 0, settings });
  const receivers: WebhookReceiver[] = [];
  try {
    const authorization = `Bearer ${await stack.identityProvider!.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', roles: ['LMS.Admin'] })}`;
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${stack.apiBaseUrl}${path}`, {
        method,
        headers: { authorization, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: response.status, body: (await response.json().catch(() => null)) as { id: string } };
    };
    const subscribe = async () => {
      const receiver = await startWebhookReceiver();
      receivers.push(receiver);
      const subscription = await call('POST', '/webhooks', { url: receiver.url, events: ['project.created'] });
      return { receiver, id: subscription.body.id };
    };
    const eventIds = (receiver: WebhookReceiver) => receiver.received.map((delivery) => (JSON.parse(delivery.body) as { data: { id: string } }).data.id);

    // Latency: from each create's 201 to its event at one receiver.
    const { receiver: timed, id: timedId } = await subscribe();
    const answeredAt = new Map<string, number>();
    for (let index = 0; index < LATENCY_EVENTS; index++) {
      const created = await call('POST', '/projects', { name: `Timed ${index}` });
      answeredAt.set(created.body.id, Date.now());
    }
    await timed.waitFor(() => eventIds(timed).filter((id) => answeredAt.has(id)).length >= LATENCY_EVENTS, 120_000);
    const latencies = timed.received.flatMap((delivery) => {
      const id = (JSON.parse(delivery.body) as { data: { id: string } }).data.id;
      return answeredAt.has(id) ? [delivery.receivedAt - answeredAt.get(id)!] : [];
    });
    await call('DELETE', `/webhooks/${timedId}`);

    // Throughput: a burst of creates, each event to ten subscriptions.
    const burst = await Promise.all(Array.from({ length: SUBSCRIPTIONS }, subscribe));
    const started = Date.now();
    const ids = new Set<string>();
    const pending = Array.from({ length: BURST_EVENTS }, (_, index) => index);
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let index = pending.shift(); index !== undefined; index = pending.shift())
          ids.add((await call('POST', '/projects', { name: `Burst ${index}` })).body.id);
      }),
    );
    const arrived = (receiver: WebhookReceiver) => new Set(eventIds(receiver).filter((id) => ids.has(id))).size;
    await Promise.all(burst.map(({ receiver }) => receiver.waitFor(() => arrived(receiver) === ids.size, 600_000)));
    const seconds = (Date.now() - started) / 1000;
    const delivered = burst.reduce((sum, { receiver }) => sum + arrived(receiver), 0);
    const duplicates = burst.reduce(
      (sum, { receiver }) => sum + receiver.received.length - new Set(receiver.received.map((delivery) => delivery.headers['webhook-id'])).size,
      0,
    );

    // Last, as it leaves thousands of events behind it: a create's requests per second, with no subscription and with one, in turns.
    const createLoad = () =>
      autocannon({
        url: `${stack.apiBaseUrl}/projects`,
        method: 'POST',
        connections: CONCURRENT_REQUESTS,
        duration: TURN_SECONDS,
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Load' }),
      }).then((result) => result.requests.total / TURN_SECONDS);
    await createLoad();
    const without: number[] = [];
    const withOne: number[] = [];
    let subscribed: { id: string } | undefined;
    for (let turn = 0; turn < TURNS; turn++) {
      without.push(await createLoad());
      subscribed = await subscribe();
      withOne.push(await createLoad());
      await call('DELETE', `/webhooks/${subscribed.id}`);
    }

    const withoutRate = median(without);
    const withRate = median(withOne);
    return {
      latencyMs: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), events: latencies.length },
      burst: {
        events: ids.size,
        subscriptions: SUBSCRIPTIONS,
        seconds: Math.round(seconds * 10) / 10,
        deliveriesPerSecond: Math.round(delivered / seconds),
        lost: ids.size * SUBSCRIPTIONS - delivered,
        duplicates,
      },
      create: {
        withoutSubscription: Math.round(withoutRate),
        withSubscription: Math.round(withRate),
        ratio: Math.round((withRate / withoutRate) * 100) / 100,
      },
    };
  } finally {
    for (const receiver of receivers) await receiver.close();
    await stack.stop();
  }
}
