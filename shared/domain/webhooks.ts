import type { EventType } from '../schemas/events.js';
import { MAX_WEBHOOKS_PER_TENANT, type DeliveryStatus, type Webhook } from '../schemas/webhooks.js';
import { conflict } from './errors.js';

/** Deliveries that end Failed one after another before a subscription is turned off. */
export const FAILED_DELIVERIES_TO_DISABLE = 3;

export const DISABLED_BECAUSE = {
  gone: 'The receiver answered 410 Gone.',
  failing: `${FAILED_DELIVERIES_TO_DISABLE} deliveries in a row failed.`,
} as const;

/** What one attempt makes of a delivery. */
export interface AfterAttempt {
  status: DeliveryStatus;
  nextAttemptAt: string | null;
  /** The receiver asked never to be called again: the subscription goes off at once. */
  gone: boolean;
}

/**
 * An attempt succeeds on a 2xx; a 410 ends the delivery and its subscription; anything else (another
 * status, no answer within the time, a URL that now breaks a rule) waits for the next try of the
 * schedule, and fails the delivery once the schedule is used up. Redirects are not followed, so a
 * 3xx is a failed attempt too.
 */
export function afterAttempt(attempt: number, status: number | undefined, retrySchedule: readonly number[], now = Date.now()): AfterAttempt {
  if (status !== undefined && status >= 200 && status < 300) return { status: 'Succeeded', nextAttemptAt: null, gone: false };
  if (status === 410) return { status: 'Failed', nextAttemptAt: null, gone: true };
  const wait = retrySchedule[attempt - 1];
  if (wait === undefined) return { status: 'Failed', nextAttemptAt: null, gone: false };
  return { status: 'Pending', nextAttemptAt: new Date(now + wait).toISOString(), gone: false };
}

/** What the rules read of a subscription beside the resource: its secrets and its failures in a row. */
export interface SubscriptionState extends Pick<Webhook, 'id' | 'active' | 'disabledReason' | 'events' | 'createdAt'> {
  secret: string;
  /** Every secret replaced in the last day, newest first: each signs until its `until`. */
  retiredSecrets: RetiredSecret[];
  /** Deliveries that ended Failed since the last that succeeded. */
  failedInARow: number;
  /** Which deliveries those were (the last few): one sent again by hand that fails again is not counted twice. */
  failedDeliveryIds?: string[];
}

/** A secret a rotation replaced, and until when it still signs. */
export interface RetiredSecret {
  secret: string;
  until: string;
}

/** After a rotation the secret it replaced still signs, beside the new one, for a day. */
const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
/** Secrets signing at once, the current one included: bounds the signature header and the document. */
export const MAX_SIGNING_SECRETS = 50;

/** Whether a subscription receives an event: active, asked for it, and there when it happened (a ping: the one pinged). */
export function receives(
  subscription: Pick<SubscriptionState, 'id' | 'active' | 'events' | 'createdAt'>,
  event: { eventType: EventType; timestamp: string; webhookId?: string },
): boolean {
  if (!subscription.active) return false;
  if (event.webhookId) return subscription.id === event.webhookId;
  return subscription.events.includes(event.eventType) && subscription.createdAt <= event.timestamp;
}

/** A ping, or a delivery sent again, goes to a subscription that is on: one switched off gets nothing. */
export function assertActive(subscription: Pick<SubscriptionState, 'id' | 'active'>): void {
  if (!subscription.active) throw conflict('webhookInactive', { id: subscription.id });
}

/** One of the tenant's free slots, at random so that racing creates seldom pick the same; a conflict when there is none. */
export function freeSlot(taken: ReadonlySet<number>, random = Math.random): number {
  const free = Array.from({ length: MAX_WEBHOOKS_PER_TENANT }, (_, index) => index + 1).filter((slot) => !taken.has(slot));
  if (free.length === 0) throw conflict('tooManyWebhooks', { limit: MAX_WEBHOOKS_PER_TENANT });
  return free[Math.floor(random() * free.length)]!;
}

/** The replaced secrets that still sign at `now`, newest first. */
const stillSigning = (subscription: Pick<SubscriptionState, 'retiredSecrets'>, now: number) =>
  subscription.retiredSecrets.filter(({ until }) => Date.parse(until) > now);

/** The secrets an attempt signs with: the current one, and every one it replaced within the last day. */
export function signingSecrets(subscription: Pick<SubscriptionState, 'secret' | 'retiredSecrets'>, now = Date.now()): string[] {
  return [subscription.secret, ...stillSigning(subscription, now).map(({ secret }) => secret)];
}

/**
 * The secrets after a rotation to `secret`: every one it replaces keeps signing beside it for a day,
 * however many rotations follow; a rotation that would make more than MAX_SIGNING_SECRETS sign is refused.
 */
export function rotated(
  current: Pick<SubscriptionState, 'secret' | 'retiredSecrets'>,
  secret: string,
  now: number,
): Pick<SubscriptionState, 'secret' | 'retiredSecrets'> {
  const signing = stillSigning(current, now);
  // After this rotation: the new secret, the one it replaces, and those still signing.
  if (signing.length + 2 > MAX_SIGNING_SECRETS) throw conflict('tooManySigningSecrets', { limit: MAX_SIGNING_SECRETS });
  return { secret, retiredSecrets: [{ secret: current.secret, until: new Date(now + ROTATION_OVERLAP_MS).toISOString() }, ...signing] };
}

/**
 * A change of the fields given. Switching a subscription on or off forgets why it went off and its
 * failures in a row; `active` as it already is switches nothing (a subscription that is on keeps
 * counting its failures, one the API turned off keeps its reason), so that a PUT of what is stored changes nothing.
 */
export function changed<S extends SubscriptionState>(current: S, changes: Partial<Webhook>, now: string): S {
  const switched = changes.active !== undefined && changes.active !== current.active;
  return { ...current, ...changes, ...(switched ? { disabledReason: null, failedInARow: 0, failedDeliveryIds: [] } : {}), updatedAt: now };
}

/**
 * The subscription after one of its deliveries ended: a success clears the count of failures, a 410
 * or the third delivery in a row to end Failed turns it off. A delivery sent again by hand that ends
 * Failed again is still one delivery: it counts once. The usual case, a success after successes, is the subscription as it was.
 */
export function afterDeliveryEnd<S extends SubscriptionState>(latest: S, deliveryId: string, ended: AfterAttempt, now: string): S {
  if (ended.status === 'Succeeded') return latest.failedInARow === 0 ? latest : { ...latest, failedInARow: 0, failedDeliveryIds: [] };
  const counted = latest.failedDeliveryIds ?? [];
  const again = counted.includes(deliveryId);
  const failedInARow = again ? latest.failedInARow : latest.failedInARow + 1;
  const failedDeliveryIds = again ? counted : [...counted, deliveryId].slice(-FAILED_DELIVERIES_TO_DISABLE);
  const reason = ended.gone ? DISABLED_BECAUSE.gone : failedInARow >= FAILED_DELIVERIES_TO_DISABLE ? DISABLED_BECAUSE.failing : null;
  if (!reason || !latest.active) return { ...latest, failedInARow, failedDeliveryIds };
  return { ...latest, failedInARow, failedDeliveryIds, active: false, disabledReason: reason, updatedAt: now };
}
