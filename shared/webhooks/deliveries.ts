/**
 * Delivery, in three steps, each the whole work of its trigger:
 * - the change feed relay (shared/relay.ts) makes each event's deliveries, due at once (makeDeliveriesOf),
 *   and puts the attempt of every delivery the feed shows due on the webhooks queue, several in a message
 *   (queueDue): the first attempt of a delivery just made, a ping, a retry asked for, one the sweep
 *   brought back. It calls no receiver;
 * - the webhooks queue's trigger makes a message's attempts side by side (attempt), each within its
 *   tenant's turns in the instance, and puts each next one, if the schedule has one, back on the queue
 *   for its time (no function sleeps);
 * - the sweep (sweep) brings back through the change feed every delivery whose attempt nothing carries
 *   any more.
 * At least once: every step can run twice without harm, and each attempt is claimed before it is made,
 * so that two runs of it send it once.
 */
import { webhookSettings } from '../config.js';
import { payloadOf, readEvent, type EventDocument } from '../data/events.js';
import {
  bringBack,
  claimAttempt,
  deliveriesOf,
  makeDeliveries,
  overdueDeliveries,
  recordAttempt,
  type DeliveryDocument,
} from '../data/deliveries-repository.js';
import { allWebhooks, readWebhook, recordDeliveryEnd } from '../data/webhooks-repository.js';
import { afterAttempt, signingSecrets } from '../domain/webhooks.js';
import { enqueueWebhookWork, webhookWorkWaiting } from '../queues.js';
import { ATTEMPTS_PER_MESSAGE, type WebhookMessage } from '../schemas/webhooks.js';
import { settleAll } from '../settle-all.js';
import { ATTEMPT_TIMEOUT_MS, attemptDelivery } from './sender.js';
import { signedHeaders } from './signing.js';
import { takeTurn, turnWaitSeconds, type TenantTurn } from './tenant-turns.js';

/** What the sweep leaves alone while the queue has nothing waiting: attempts this recently due are still on their way through it. */
export const SWEEP_GRACE_MS = 10_000;
/** A delivery the sweep brought back is brought back again if it is still overdue this long after: its message may have been lost too. */
export const SWEEP_AGAIN_MS = 10 * 60_000;
/** The most deliveries one run of the sweep brings back. */
export const SWEEP_LIMIT = 500;
/** A queue message may turn up this much before its attempt is due (the queue's clock is not ours). */
const EARLY_MS = 2_000;
/** How long an attempt is held by whoever makes it: its longest run and the sweep's grace. */
const ATTEMPT_LEASE_MS = ATTEMPT_TIMEOUT_MS + SWEEP_GRACE_MS;

/** Whether the delivery's next attempt is due (within `earlyMs`): Pending, and no run holds it. */
export function isDue(delivery: Pick<DeliveryDocument, 'status' | 'nextAttemptAt'>, now = Date.now(), earlyMs = 0): boolean {
  return delivery.status === 'Pending' && delivery.nextAttemptAt !== null && Date.parse(delivery.nextAttemptAt) <= now + earlyMs;
}

/**
 * Makes a tenant's events' deliveries, one per subscription that asked for the event, each due at
 * once: the change feed shows them to the relay, which queues their first attempts. Its subscriptions
 * are read once; a delivery made already (the same events handed over again) is left as it is.
 */
export async function makeDeliveriesOf(tenantId: string, events: readonly EventDocument[]): Promise<void> {
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
export async function queueDue(deliveries: readonly DeliveryDocument[]): Promise<void> {
  const attempts = deliveries.map(({ tenantId, id, attempts: made }) => ({ tenantId, deliveryId: id, attempt: made + 1 }));
  const messages = Array.from({ length: Math.ceil(attempts.length / ATTEMPTS_PER_MESSAGE) }, (_, index) =>
    attempts.slice(index * ATTEMPTS_PER_MESSAGE, (index + 1) * ATTEMPTS_PER_MESSAGE),
  );
  await settleAll(messages.map((batch) => enqueueWebhookWork({ attempts: batch })));
}

/**
 * The attempts a queue message carries, side by side, each in one of its tenant's turns. Those whose
 * tenant has no turn for them go back on the queue together, to wait (if the queue cannot take them,
 * this fails and the host delivers the message again: the attempts made by then are not made twice).
 * Fails, once every attempt has ended, if one failed for a reason of ours.
 */
export async function attempt(message: WebhookMessage): Promise<void> {
  const turns = message.attempts.map(({ tenantId }) => takeTurn(tenantId));
  // Each attempt starts as soon as it has its turn; those without one are known within a second.
  const attempting = settleAll(
    message.attempts.map(async ({ tenantId, deliveryId, attempt: attemptNumber }, index) => {
      const turn = await turns[index];
      if (!turn) return;
      try {
        await attemptNow(tenantId, deliveryId, attemptNumber, turn);
      } finally {
        turn.giveBack();
      }
    }),
  );
  const waited = (message.waited ?? 0) + 1;
  const queueWaiting = Promise.all(turns).then(async (given) => {
    const waiting = message.attempts.filter((_, index) => !given[index]);
    if (waiting.length) await enqueueWebhookWork({ attempts: waiting, waited }, turnWaitSeconds(waited));
  });
  await settleAll([attempting, queueWaiting]);
}

/**
 * The attempt itself, unless it happened already (a message delivered twice), the delivery ended, or
 * it is not due. It is claimed first, so a second run of it finds it taken; the receiver gets the
 * event signed with every secret in use; the outcome is recorded, and the next attempt, if there is
 * one, goes on the queue for its time.
 */
async function attemptNow(tenantId: string, deliveryId: string, attemptNumber: number, turn: TenantTurn): Promise<void> {
  // Not taken when not due: another run holds this attempt, or the message came early (the sweep brings it back when due).
  const delivery = await claimAttempt(tenantId, deliveryId, attemptNumber, new Date(Date.now() + EARLY_MS), ATTEMPT_LEASE_MS);
  if (!delivery) return;
  const [subscription, event] = await Promise.all([readWebhook(tenantId, delivery.webhookId), readEvent(tenantId, delivery.eventId)]);
  const { retrySchedule, allowLoopback } = webhookSettings();

  if (!subscription?.active || !event) {
    // A subscription switched off receives nothing; an event past its week cannot be sent.
    const lastError = !event ? 'The event is no longer kept.' : 'The subscription is switched off or deleted.';
    await recordAttempt(delivery, attemptNumber, { lastStatusCode: null, lastError }, { status: 'Failed', nextAttemptAt: null, gone: false });
    return;
  }

  const body = JSON.stringify(payloadOf(event));
  const headers = signedHeaders(signingSecrets(subscription), event.id, Math.floor(Date.now() / 1000), body);
  turn.calling();
  const outcome = await attemptDelivery(subscription.url, headers, body, allowLoopback);
  const after = afterAttempt(attemptNumber, outcome.status, retrySchedule);
  const lastError = outcome.status === undefined ? outcome.error : after.status === 'Succeeded' ? null : `The receiver answered ${outcome.status}.`;
  const recorded = await recordAttempt(delivery, attemptNumber, { lastStatusCode: outcome.status ?? null, lastError }, after);
  // Another run of the same attempt recorded first: it carries on from here.
  if (!recorded) return;
  if (after.status === 'Pending') {
    const waitSeconds = (Date.parse(after.nextAttemptAt!) - Date.now()) / 1000;
    // If the queue cannot take it now, the sweep brings the delivery back through the change feed once it is overdue.
    await enqueueWebhookWork({ attempts: [{ tenantId, deliveryId, attempt: attemptNumber + 1 }] }, waitSeconds).catch(() => undefined);
    return;
  }
  await recordDeliveryEnd(subscription, deliveryId, after);
}

/**
 * Brings back through the change feed the deliveries whose attempt nothing carries any more (a queue
 * message lost, an attempt cut off by a crash): overdue, and not brought back since they fell due, or
 * not for SWEEP_AGAIN_MS (the message the relay queued for it may have been lost in its turn). It
 * writes them and queues nothing: the relay queues their attempts. While the queue has messages
 * waiting to be handled, a delivery that looks overdue may be waiting among them (a burst, a tenant
 * waiting for its turn): then only those overdue for SWEEP_AGAIN_MS are brought back. At most `limit`
 * a run; the next runs bring back the rest.
 */
export async function sweep(now = Date.now(), limit = SWEEP_LIMIT): Promise<number> {
  const busy = await webhookWorkWaiting();
  const before = new Date(now - (busy ? SWEEP_AGAIN_MS : SWEEP_GRACE_MS)).toISOString();
  const again = new Date(now - SWEEP_AGAIN_MS).toISOString();
  let broughtBack = 0;
  for await (const page of overdueDeliveries(before, again)) {
    broughtBack += (await Promise.all(page.slice(0, limit - broughtBack).map(bringBack))).filter(Boolean).length;
    if (broughtBack >= limit) break;
  }
  return broughtBack;
}
