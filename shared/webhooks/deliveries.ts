/**
 * Delivery, driven by Cosmos DB's change feed (functions/changes-relay.ts): each event is handed over
 * to the subscriptions it is for, its deliveries made and their first attempts made at once; and
 * every delivery the feed shows due (a ping, a retry asked for, one a sweep brought back) is attempted.
 * A failed attempt puts the next one on the webhooks queue with the retry schedule's delay (no
 * function sleeps). At least once: every step can run twice without harm, and each attempt is claimed
 * before it is made, so that two runs of it send it once.
 */
import pLimit from 'p-limit';
import { webhookSettings } from '../config.js';
import { payloadOf, readEvent, type EventDocument } from '../data/events.js';
import {
  bringBack,
  claimAttempt,
  deliveriesOf,
  makeDeliveries,
  overdueDeliveries,
  readDelivery,
  recordAttempt,
  type DeliveryDocument,
} from '../data/deliveries-repository.js';
import { allWebhooks, readWebhook, recordDeliveryEnd, signingSecrets, type WebhookDocument } from '../data/webhooks-repository.js';
import { afterAttempt } from '../domain/webhooks.js';
import { enqueueWebhookWork } from '../queues.js';
import { settleAll } from '../settle-all.js';
import { ATTEMPT_TIMEOUT_MS, attemptDelivery } from './sender.js';
import { signedHeaders } from './signing.js';

/** What the sweep leaves alone: attempts this recently due are still on their way through the queue. */
export const SWEEP_GRACE_MS = 10_000;
/** A queue message may turn up this much before its attempt is due (the queue's clock is not ours). */
const EARLY_MS = 2_000;
/** How long an attempt is held by whoever makes it: its longest run and the sweep's grace. */
const ATTEMPT_LEASE_MS = ATTEMPT_TIMEOUT_MS + SWEEP_GRACE_MS;
/** Attempts one hand-over makes at once: a page of changes can hold a hundred events for twenty subscriptions each. */
const ATTEMPTS_AT_ONCE = 50;

/** Whether the delivery's next attempt is due (within `earlyMs`): Pending, and no run holds it. */
export function isDue(delivery: Pick<DeliveryDocument, 'status' | 'nextAttemptAt'>, now = Date.now(), earlyMs = 0): boolean {
  return delivery.status === 'Pending' && delivery.nextAttemptAt !== null && Date.parse(delivery.nextAttemptAt) <= now + earlyMs;
}

/**
 * Hands a tenant's events over: its subscriptions are read once, each event's deliveries made, and
 * their first attempts made now, side by side. A delivery made already (the same events handed over
 * again) is attempted only if it is due and no run holds it.
 */
export async function handOverEvents(tenantId: string, events: readonly EventDocument[]): Promise<void> {
  const subscriptions = await allWebhooks(tenantId);
  const toMake = events.flatMap((event) => deliveriesOf(event, subscriptions, ATTEMPT_LEASE_MS).map((delivery) => ({ ...delivery, event })));
  const made = await makeDeliveries(tenantId, toMake);
  const limit = pLimit(ATTEMPTS_AT_ONCE);
  await settleAll(
    made.map(({ delivery, made: mine }, index) => {
      const { subscription, event } = toMake[index]!;
      return limit(() => attemptNow(delivery, mine ? 1 : delivery.attempts + 1, subscription, event, { claimed: mine }));
    }),
  );
}

/** Attempts deliveries the change feed shows due: each one's next attempt, unless another run holds it. */
export async function attemptDue(deliveries: readonly DeliveryDocument[]): Promise<void> {
  const limit = pLimit(ATTEMPTS_AT_ONCE);
  await settleAll(
    deliveries.map((delivery) =>
      limit(async () => {
        const [subscription, event] = await Promise.all([readWebhook(delivery.tenantId, delivery.webhookId), readEvent(delivery.tenantId, delivery.eventId)]);
        await attemptNow(delivery, delivery.attempts + 1, subscription, event, { claimed: false });
      }),
    ),
  );
}

/** One attempt of a delivery, from its queue message: unless it happened already (a message delivered twice) or the delivery ended. */
export async function attempt(tenantId: string, deliveryId: string, attemptNumber: number): Promise<void> {
  const delivery = await readDelivery(tenantId, deliveryId);
  if (!delivery) return;
  const [subscription, event] = await Promise.all([readWebhook(tenantId, delivery.webhookId), readEvent(tenantId, delivery.eventId)]);
  await attemptNow(delivery, attemptNumber, subscription, event, { claimed: false });
}

/**
 * The attempt itself. It is claimed first, so a second run of it finds it taken; the receiver gets
 * the event signed with every secret in use; the outcome is recorded, and the next attempt, if
 * there is one, goes on the queue for its time.
 */
async function attemptNow(
  found: DeliveryDocument,
  attemptNumber: number,
  subscription: WebhookDocument | undefined,
  event: Pick<EventDocument, 'id' | 'eventType' | 'timestamp' | 'data'> | undefined,
  { claimed }: { claimed: boolean },
): Promise<void> {
  let delivery: DeliveryDocument | undefined = found;
  if (!claimed) {
    if (found.attempts >= attemptNumber) return;
    // Not due: another run holds this attempt, or the message came early (the sweep brings it back when due).
    if (!isDue(found, Date.now(), EARLY_MS)) return;
    delivery = await claimAttempt(found, ATTEMPT_LEASE_MS);
    if (!delivery) return;
  }
  const { retrySchedule, allowLoopback } = webhookSettings();

  if (!subscription?.active || !event) {
    // A subscription switched off receives nothing; an event past its week cannot be sent.
    const lastError = !event ? 'The event is no longer kept.' : 'The subscription is switched off or deleted.';
    await recordAttempt(delivery, attemptNumber, { lastStatusCode: null, lastError }, { status: 'Failed', nextAttemptAt: null, gone: false });
    return;
  }

  const body = JSON.stringify(payloadOf(event));
  const headers = signedHeaders(signingSecrets(subscription), event.id, Math.floor(Date.now() / 1000), body);
  const outcome = await attemptDelivery(subscription.url, headers, body, allowLoopback);
  const after = afterAttempt(attemptNumber, outcome.status, retrySchedule);
  const lastError = outcome.status === undefined ? outcome.error : after.status === 'Succeeded' ? null : `The receiver answered ${outcome.status}.`;
  const recorded = await recordAttempt(delivery, attemptNumber, { lastStatusCode: outcome.status ?? null, lastError }, after);
  // Another run of the same attempt recorded first: it carries on from here.
  if (!recorded) return;
  if (after.status === 'Pending') {
    const waitSeconds = (Date.parse(after.nextAttemptAt!) - Date.now()) / 1000;
    // If the queue cannot take it now, the sweep brings the delivery back through the change feed once it is overdue.
    await enqueueWebhookWork({ tenantId: delivery.tenantId, deliveryId: delivery.id, attempt: attemptNumber + 1 }, waitSeconds).catch(() => undefined);
    return;
  }
  await recordDeliveryEnd(subscription, delivery.id, after);
}

/**
 * Brings back through the change feed the deliveries whose attempt nothing carries any more (a queue
 * message lost, an attempt cut off by a crash): overdue, and not brought back since they fell due.
 * It writes them and queues nothing, so no attempt is ever queued twice.
 */
export async function sweep(now = Date.now()): Promise<number> {
  const before = new Date(now - SWEEP_GRACE_MS).toISOString();
  let broughtBack = 0;
  for await (const page of overdueDeliveries(before)) broughtBack += (await Promise.all(page.map(bringBack))).filter(Boolean).length;
  return broughtBack;
}
