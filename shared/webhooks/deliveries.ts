/**
 * Delivery, driven by the webhooks queue: an event is handed over to the subscriptions it is for and
 * each delivery's first attempt is made at once; a failed attempt puts the next one on the queue
 * with the retry schedule's delay (no function sleeps). At least once: every step can run twice
 * without harm, and the sweep finds what a lost queue message left behind.
 */
import { webhookSettings } from '../config.js';
import { overdueEvents, payloadOf, readEvent, type EventDocument } from '../data/events.js';
import {
  claimAttempt,
  handOver,
  overdueDeliveries,
  readDelivery,
  readWebhook,
  recordAttempt,
  recordDeliveryEnd,
  signingSecrets,
  type DeliveryDocument,
  type WebhookDocument,
} from '../data/webhooks-repository.js';
import { afterAttempt } from '../domain/webhooks.js';
import { enqueueWebhookWork } from '../queues.js';
import { ATTEMPT_TIMEOUT_MS, attemptDelivery } from './sender.js';
import { signedHeaders } from './signing.js';

/** What the sweep leaves alone: announcements and attempts this recent are still on their way through the queue. */
export const SWEEP_GRACE_MS = 10_000;
/** A queue message may turn up this much before its attempt is due (the queue's clock is not ours). */
const EARLY_MS = 2_000;
/** How long an attempt is held by whoever makes it: its longest run and the sweep's grace. */
const ATTEMPT_LEASE_MS = ATTEMPT_TIMEOUT_MS + SWEEP_GRACE_MS;

/** Hands an event over to its subscriptions, and makes each delivery's first attempt now, side by side. */
export async function handOverEvent(tenantId: string, eventId: string): Promise<void> {
  const event = await readEvent(tenantId, eventId);
  // Gone (its week is over) or handed over already: the deliveries made then carry on.
  if (!event?.pending) return;
  const deliveries = await handOver(event, ATTEMPT_LEASE_MS);
  await Promise.all(deliveries.map(({ delivery, subscription }) => attemptNow(delivery, 1, subscription, event, { claimed: true })));
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
  event: EventDocument | undefined,
  { claimed }: { claimed: boolean },
): Promise<void> {
  let delivery: DeliveryDocument | undefined = found;
  if (!claimed) {
    if (found.status !== 'Pending' || found.attempts >= attemptNumber) return;
    // Not due: another run holds this attempt, or the message came early (the sweep queues it when due).
    if (found.nextAttemptAt && Date.parse(found.nextAttemptAt) > Date.now() + EARLY_MS) return;
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
    // If the queue cannot take it now, the sweep finds the delivery overdue and queues it.
    await enqueueWebhookWork({ tenantId: delivery.tenantId, deliveryId: delivery.id, attempt: attemptNumber + 1 }, waitSeconds).catch(() => undefined);
    return;
  }
  await recordDeliveryEnd(subscription, after);
}

/** Queues what no message carries any more: events never announced, and deliveries whose next attempt is overdue. */
export async function sweep(now = Date.now()): Promise<{ events: number; deliveries: number }> {
  const before = new Date(now - SWEEP_GRACE_MS).toISOString();
  let events = 0;
  let deliveries = 0;
  for await (const page of overdueEvents(before)) {
    await Promise.all(page.map(({ tenantId, id }) => enqueueWebhookWork({ tenantId, eventId: id })));
    events += page.length;
  }
  for await (const page of overdueDeliveries(before)) {
    await Promise.all(page.map(({ tenantId, id, attempts }) => enqueueWebhookWork({ tenantId, deliveryId: id, attempt: attempts + 1 })));
    deliveries += page.length;
  }
  return { events, deliveries };
}
