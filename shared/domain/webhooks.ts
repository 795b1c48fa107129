import type { DeliveryStatus } from '../schemas/webhooks.js';

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
