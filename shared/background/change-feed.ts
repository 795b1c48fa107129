/**
 * What a committed change sets going, read from the change feed of `tenant-data`: the one way the app
 * hands work to the background (Azure's transactional outbox for Cosmos DB). An event's deliveries are
 * made; a delivery shown due (one just made, a ping, a retry asked for, one a sweep brought back) has
 * its attempt put on the webhooks queue; a job shown Queued goes on the RAG queue. The relay only
 * hands over: it calls no receiver, so a page of changes takes the few writes it asks for, whatever
 * the receivers do. Everything here may run twice: the trigger retries a failed page of changes until
 * it succeeds, and after a crash the next lease holder reads the page again.
 */
import { z } from 'zod';
import { deliveriesOf, makeDeliveries, type DeliveryDocument, type EventToDeliver } from '../data/deliveries-repository.js';
import { allWebhooks } from '../data/webhooks-repository.js';
import { dispatch } from './rag-queue.js';
import { EVENT_TYPES } from '../schemas/events.js';
import { settleAll } from '../lib/settle-all.js';
import { ATTEMPTS_PER_MESSAGE, delivery } from '../schemas/webhooks.js';
import { ragJob } from '../schemas/rag.js';
import { enqueueWebhookWork } from './queues.js';

/**
 * What the relay reads of each kind of document, as the resources' schemas say it (no more, so that no
 * part of a document it does not read can stop the feed); any other document is none of its business.
 */
const stored = { id: z.string().min(1), tenantId: z.string().min(1) };
const relayed = z.discriminatedUnion('type', [
  z.object({ ...stored, type: z.literal('event'), eventType: z.enum(EVENT_TYPES), timestamp: z.string(), webhookId: z.string().optional() }),
  z.object({ ...stored, type: z.literal('delivery'), ...delivery.pick({ status: true, nextAttemptAt: true, attempts: true }).shape }),
  z.object({ ...stored, type: z.literal('ragJob'), status: ragJob.shape.status, dispatched: z.literal(true).optional() }),
]);
type Relayed<Type> = Extract<z.output<typeof relayed>, { type: Type }>;
const RELAYED_TYPES: readonly unknown[] = ['event', 'delivery', 'ragJob'];

/**
 * Hands over what one page of changes asks for, all of it side by side; fails (for the trigger to
 * retry) once all has settled. Answers the ids of documents of a relayed kind that are not as the
 * app writes them: left alone, so that they can never stop the feed.
 */
export async function relayChanges(documents: readonly unknown[]): Promise<string[]> {
  const events = new Map<string, Relayed<'event'>[]>();
  const due: Relayed<'delivery'>[] = [];
  const jobs: Relayed<'ragJob'>[] = [];
  const malformed: string[] = [];
  for (const document of documents) {
    if (!RELAYED_TYPES.includes((document as { type?: unknown } | null)?.type)) continue;
    const parsed = relayed.safeParse(document);
    if (!parsed.success) {
      malformed.push(String((document as { id?: unknown }).id));
      continue;
    }
    const change = parsed.data;
    // A ping's event comes with its delivery, which the feed shows on its own.
    if (change.type === 'event' && !change.webhookId) {
      const ofTenant = events.get(change.tenantId) ?? [];
      ofTenant.push(change);
      events.set(change.tenantId, ofTenant);
    } else if (change.type === 'delivery' && isDue(change)) due.push(change);
    else if (change.type === 'ragJob') jobs.push(change);
  }
  await settleAll([...[...events].map(([tenantId, list]) => makeDeliveriesOf(tenantId, list)), queueDue(due), ...jobs.map(dispatch)]);
  return malformed;
}

/** Whether the delivery's next attempt is due (within `earlyMs`): Pending, and no run holds it. */
export function isDue(delivery: Pick<DeliveryDocument, 'status' | 'nextAttemptAt'>, now = Date.now(), earlyMs = 0): boolean {
  return delivery.status === 'Pending' && delivery.nextAttemptAt !== null && Date.parse(delivery.nextAttemptAt) <= now + earlyMs;
}

/**
 * Makes a tenant's events' deliveries, one per subscription that asked for the event, each due at
 * once: the change feed shows them to the relay, which queues their first attempts. Its subscriptions
 * are read once; a delivery made already (the same events handed over again) is left as it is.
 */
export async function makeDeliveriesOf(tenantId: string, events: readonly EventToDeliver[]): Promise<void> {
  const subscriptions = await allWebhooks(tenantId);
  await makeDeliveries(
    tenantId,
    events.flatMap((event) => deliveriesOf(event, subscriptions)),
  );
}

/**
 * Puts the next attempt of each delivery the change feed shows due on the webhooks queue, up to 50 in
 * a message (a page of changes shows up to 100): a few queue messages a page, where one each would
 * make every delivery three requests to the queue service. Fails if the queue refuses one.
 */
export async function queueDue(deliveries: readonly Pick<DeliveryDocument, 'tenantId' | 'id' | 'attempts'>[]): Promise<void> {
  const attempts = deliveries.map(({ tenantId, id, attempts: made }) => ({ tenantId, deliveryId: id, attempt: made + 1 }));
  const messages = Array.from({ length: Math.ceil(attempts.length / ATTEMPTS_PER_MESSAGE) }, (_, index) =>
    attempts.slice(index * ATTEMPTS_PER_MESSAGE, (index + 1) * ATTEMPTS_PER_MESSAGE),
  );
  await settleAll(messages.map((batch) => enqueueWebhookWork({ attempts: batch })));
}
