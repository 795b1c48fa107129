/**
 * Webhooks on the local stack: how long an event takes from a change's 201 to its receiver, alone and
 * at 100 creates a second over ten tenants (alone, with an eleventh tenant creating as much whose
 * receiver answers, and with one whose receiver never answers), how many deliveries per second reach ten subscriptions, and a create's requests per second
 * with and without a subscription, in turns (the event rides in the create's one batch:
 * test/performance/round-trips counts it; its hand-over runs in the background on the same instance,
 * and is part of both figures). The stack serves tenants of the bench's own identity provider.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { Agent, fetch } from 'undici';
import { LOCAL_CLIENT_ID } from '../local/defaults.js';
import { startIdentityProvider } from '../local/identity/provider.js';
import { startStack } from '../local/stack.js';
import { loadOrCreateTlsCertificate } from '../local/tls.js';
import { startWebhookReceiver, type WebhookReceiver } from '../tools/webhook-receiver.js';
import { CONCURRENT_REQUESTS, median } from './figures.js';

const LATENCY_EVENTS = 200;
const BURST_EVENTS = 1_000;
const SUBSCRIPTIONS = 10;
const TURNS = 4;
const TURN_SECONDS = 3;
/** The run at a steady rate: this many tenants, each with a receiver that answers at once, sharing this many creates a second. */
const STEADY_TENANTS = 10;
const STEADY_CREATES_PER_SECOND = 100;
const STEADY_SECONDS = 20;
/** How long the bench waits for the steady run's events before it counts the missing ones lost. */
const ARRIVAL_TIMEOUT_MS = 120_000;
/** The connections the bench's calls share: a create waits for one rather than open more than a client would. */
const CONNECTIONS = 32;

interface Latencies {
  p50: number;
  p99: number;
  max: number;
  events: number;
  lost: number;
  /** Creates of the healthy tenants answered other than 201 (or not at all): their events are not counted. */
  refused: number;
  /** The rate the creates were answered at: the bench's 100 a second unless the API fell behind. */
  createsPerSecond: number;
}

export interface WebhookFigures {
  latencyMs: { p50: number; p99: number; events: number };
  /**
   * From 201 to receiver at 100 creates/s over ten tenants: alone; with an eleventh tenant creating as much,
   * its receiver answering; the same, its receiver hanging. What the hanging receiver moves is the last
   * against the one before, the load alike; and against the ten alone.
   */
  steady: { quiet: Latencies; answering: Latencies; hanging: Latencies; p99MovedMs: number; p99MovedFromQuietMs: number };
  burst: { events: number; subscriptions: number; seconds: number; deliveriesPerSecond: number; lost: number; duplicates: number };
  create: { withoutSubscription: number; withSubscription: number; ratio: number };
  /** The machine's load average (1 minute) as the part started and ended: it is shared. */
  loadAverage: { before: number; after: number };
}

const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * share))]!;

/** A receiver that takes the connection and the request, and never answers: each attempt runs to its deadline. */
async function startHangingReceiver() {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function benchWebhooks(): Promise<WebhookFigures> {
  const loadBefore = loadavg()[0]!;
  const tlsDir = process.env.BENCH_TLS_DIR!;
  const tenants = Array.from({ length: STEADY_TENANTS + 2 }, () => randomUUID());
  const home = tenants[0]!;
  // An identity provider of the bench's own, for its tenants, with the certificate the bench and the host trust.
  const identityProvider = await startIdentityProvider({ tenants, clientId: LOCAL_CLIENT_ID, tls: await loadOrCreateTlsCertificate(tlsDir) });
  const settings = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AUTH_|COSMOS_|GRAPH_|EMBEDDINGS_|RAG_|WEBHOOKS_|AzureWebJobs)/.test(name))),
    AUTH_TENANT_ID: home,
    AUTH_ALLOWED_TENANTS: tenants.join(','),
    AUTH_CLIENT_ID: LOCAL_CLIENT_ID,
    AUTH_AUTHORITY_HOST: identityProvider.authorityHost,
  };
  const stack = await startStack({ apiPort: 0, identityProviderPort: 0, settings });
  const receivers: { close(): Promise<void> }[] = [];
  const dispatcher = new Agent({ connections: CONNECTIONS });
  try {
    const authorizations = new Map<string, string>();
    for (const tenantId of tenants) {
      authorizations.set(tenantId, `Bearer ${await identityProvider.issueToken({ tenantId, kind: 'user', roles: ['LMS.Admin'] })}`);
    }
    const call = async (method: string, path: string, body?: unknown, tenantId = home) => {
      const response = await fetch(`${stack.apiBaseUrl}${path}`, {
        method,
        headers: { authorization: authorizations.get(tenantId)!, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
        dispatcher,
      });
      return { status: response.status, body: (await response.json().catch(() => null)) as { id: string } };
    };
    const subscribe = async (tenantId = home) => {
      const receiver = await startWebhookReceiver();
      receivers.push(receiver);
      const subscription = await call('POST', '/webhooks', { url: receiver.url, events: ['project.created'] }, tenantId);
      return { receiver, id: subscription.body.id };
    };
    const eventIds = (receiver: WebhookReceiver) => receiver.received.map((delivery) => (JSON.parse(delivery.body) as { data: { id: string } }).data.id);
    /** From each create's 201 to its event at the receiver, for the creates answered at `answeredAt`. */
    const latenciesAt = (receiver: WebhookReceiver, answeredAt: Map<string, number>) =>
      receiver.received.flatMap((delivery) => {
        const id = (JSON.parse(delivery.body) as { data: { id: string } }).data.id;
        return answeredAt.has(id) ? [delivery.receivedAt - answeredAt.get(id)!] : [];
      });

    // Latency: from each create's 201 to its event at one receiver.
    const { receiver: timed, id: timedId } = await subscribe();
    const answeredAt = new Map<string, number>();
    for (let index = 0; index < LATENCY_EVENTS; index++) {
      const created = await call('POST', '/projects', { name: `Timed ${index}` });
      answeredAt.set(created.body.id, Date.now());
    }
    await timed.waitFor(() => eventIds(timed).filter((id) => answeredAt.has(id)).length >= LATENCY_EVENTS, 120_000);
    const latencies = latenciesAt(timed, answeredAt);
    await call('DELETE', `/webhooks/${timedId}`);

    // At a steady rate over ten tenants, each subscribed at a receiver of its own; then again with an eleventh whose receiver
    // answers, and with an eleventh whose receiver hangs (last: its attempts wait on the queue long after).
    const steadyTenants = tenants.slice(0, STEADY_TENANTS);
    const steadyReceivers = new Map<string, WebhookReceiver>();
    for (const tenantId of steadyTenants) steadyReceivers.set(tenantId, (await subscribe(tenantId)).receiver);
    const [answeringTenant, hangingTenant] = [tenants[STEADY_TENANTS]!, tenants[STEADY_TENANTS + 1]!];
    await subscribe(answeringTenant);
    const hanging = await startHangingReceiver();
    receivers.push(hanging);
    await call('POST', '/webhooks', { url: hanging.url, events: ['project.created'] }, hangingTenant);
    const steadyRun = async (eleventh?: (typeof tenants)[number]): Promise<Latencies> => {
      const creating = eleventh ? [...steadyTenants, eleventh] : steadyTenants;
      // Per tenant: ids are numbered in each tenant's own sequence.
      const answered = new Map(steadyTenants.map((tenantId) => [tenantId, new Map<string, number>()]));
      const creates: Promise<unknown>[] = [];
      let refused = 0;
      const started = performance.now();
      const total = (STEADY_CREATES_PER_SECOND / STEADY_TENANTS) * creating.length * STEADY_SECONDS;
      for (let index = 0; index < total; index++) {
        // Each create at its time, whatever the ones before it: the rate is the bench's, not the API's.
        await sleep(Math.max(0, started + (index * 1000 * STEADY_SECONDS) / total - performance.now()));
        const tenantId = creating[index % creating.length]!;
        const ofTenant = answered.get(tenantId);
        creates.push(
          call('POST', '/projects', { name: `Steady ${index}` }, tenantId).then(
            ({ status, body }) => {
              if (status === 201) ofTenant?.set(body.id, Date.now());
              else if (ofTenant) refused += 1;
            },
            () => (refused += ofTenant ? 1 : 0),
          ),
        );
      }
      await Promise.all(creates);
      const createsPerSecond = Math.round(total / ((performance.now() - started) / 1000));
      const steady = steadyTenants.map((tenantId) => ({ receiver: steadyReceivers.get(tenantId)!, ofTenant: answered.get(tenantId)! }));
      const arrived = ({ receiver, ofTenant }: (typeof steady)[number]) => new Set(eventIds(receiver).filter((id) => ofTenant.has(id))).size;
      const expected = steady.reduce((sum, { ofTenant }) => sum + ofTenant.size, 0);
      const allArrived = () => steady.reduce((sum, each) => sum + arrived(each), 0) === expected;
      await Promise.all(steady.map(({ receiver }) => receiver.waitFor(allArrived, ARRIVAL_TIMEOUT_MS).catch(() => undefined)));
      const times = steady.flatMap(({ receiver, ofTenant }) => latenciesAt(receiver, ofTenant));
      const lost = expected - steady.reduce((sum, each) => sum + arrived(each), 0);
      return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), max: Math.max(...times), events: expected, lost, refused, createsPerSecond };
    };
    const quiet = await steadyRun();
    const answering = await steadyRun(answeringTenant);
    const withHanging = await steadyRun(hangingTenant);

    // Throughput: a burst of creates, each event to ten subscriptions.
    const burst = await Promise.all(Array.from({ length: SUBSCRIPTIONS }, () => subscribe()));
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
    await Promise.all(burst.map(({ receiver }) => receiver.waitFor(() => arrived(receiver) === ids.size, 600_000).catch(() => undefined)));
    const seconds = (Date.now() - started) / 1000;
    const delivered = burst.reduce((sum, { receiver }) => sum + arrived(receiver), 0);
    const duplicates = burst.reduce(
      (sum, { receiver }) => sum + receiver.received.length - new Set(receiver.received.map((delivery) => delivery.headers['webhook-id'])).size,
      0,
    );
    for (const { id } of burst) await call('DELETE', `/webhooks/${id}`);

    // Last, as it leaves thousands of events behind it: a create's requests per second, with no subscription and with one, in turns.
    const createLoad = () =>
      autocannon({
        url: `${stack.apiBaseUrl}/projects`,
        method: 'POST',
        connections: CONCURRENT_REQUESTS,
        duration: TURN_SECONDS,
        headers: { authorization: authorizations.get(home)!, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Load' }),
      }).then((result) => result.requests.total / TURN_SECONDS);
    await createLoad();
    const without: number[] = [];
    const withOne: number[] = [];
    for (let turn = 0; turn < TURNS; turn++) {
      without.push(await createLoad());
      const subscribed = await subscribe();
      withOne.push(await createLoad());
      await call('DELETE', `/webhooks/${subscribed.id}`);
    }

    const withoutRate = median(without);
    const withRate = median(withOne);
    return {
      latencyMs: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), events: latencies.length },
      steady: { quiet, answering, hanging: withHanging, p99MovedMs: withHanging.p99 - answering.p99, p99MovedFromQuietMs: withHanging.p99 - quiet.p99 },
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
      loadAverage: { before: Math.round(loadBefore * 10) / 10, after: Math.round(loadavg()[0]! * 10) / 10 },
    };
  } finally {
    for (const receiver of receivers) await receiver.close();
    await dispatcher.close();
    await stack.stop();
    await identityProvider.close();
  }
}
