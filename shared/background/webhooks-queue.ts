/**
 * Delivery, in three steps, each the whole work of its trigger:
 * - the change feed relay (change-feed.ts) makes each event's deliveries, due at once (makeDeliveriesOf),
 *   and puts the attempt of every delivery the feed shows due on the webhooks queue, several in a message
 *   (queueDue): the first attempt of a delivery just made, a ping, a retry asked for, one the sweep
 *   brought back. It calls no receiver;
 * - the webhooks queue's trigger makes a message's attempts side by side (attempt, here), each within its
 *   tenant's turns in the instance, and puts each next one, if the schedule has one, back on the queue
 *   for its time (no function sleeps);
 * - the sweep (webhooks-sweep.ts) brings back through the change feed every delivery whose attempt nothing carries
 *   any more.
 * At least once: every step can run twice without harm, and each attempt is claimed before it is made,
 * so that two runs of it send it once.
 */
import { webhookSettings } from '../settings/read.js';
import { payloadOf, readEvent } from '../data/events.js';
import { claimAttempt, recordAttempt } from '../data/deliveries-repository.js';
import { readWebhook, recordDeliveryEnd } from '../data/webhooks-repository.js';
import { afterAttempt, signingSecrets } from '../domain/webhooks.js';
import { enqueueWebhookWork } from './queues.js';
import type { WebhookMessage } from '../schemas/webhooks.js';
import { settleAll } from '../lib/settle-all.js';
import { ATTEMPT_TIMEOUT_MS, attemptDelivery } from '../webhooks/sender.js';
import { signedHeaders } from '../webhooks/signing.js';
import { takeTurn, turnWaitSeconds, type TenantTurn } from '../webhooks/tenant-turns.js';
import { SWEEP_GRACE_MS } from './webhooks-sweep.js';

/** A queue message may turn up this much before its attempt is due (the queue's clock is not ours). */
const EARLY_MS = 2_000;
/** How long an attempt is held by whoever makes it: its longest run and the sweep's grace. */
const ATTEMPT_LEASE_MS = ATTEMPT_TIMEOUT_MS + SWEEP_GRACE_MS;

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
