/**
 * The attempts under way in this instance, per tenant: a tenant's receivers, hanging or slow, hold a
 * few of the instance's queue invocations (host.json's batchSize plus newBatchThreshold), so that
 * another tenant's attempts never wait behind them. A tenant whose attempts end quickly may have up to
 * QUICK_ATTEMPTS_PER_TENANT under way, as a burst of its events needs; once one of them has run longer
 * than SLOW_AFTER_MS, up to SLOW_ATTEMPTS_PER_TENANT. Counted here: the libraries that bound work by
 * key (p-limit and its kin) queue what is over the bound in memory, and here it must not wait in an
 * invocation but go back to the queue.
 */

export const QUICK_ATTEMPTS_PER_TENANT = 16;
export const SLOW_ATTEMPTS_PER_TENANT = 4;
/** An attempt under way longer than this is slow: a receiver that answers at all mostly answers well within it. */
export const SLOW_AFTER_MS = 1_000;
/** The longest a message waits on the queue for its tenant's turn before it looks again. */
const LONGEST_WAIT_SECONDS = 60;

/** When each attempt under way started, per tenant. */
const underWay = new Map<string, Set<{ startedAt: number }>>();

/** A turn for one attempt of the tenant's, and how to give it back once the attempt ends; undefined while the tenant has all its turns. */
export function takeTurn(tenantId: string, now = Date.now()): (() => void) | undefined {
  const attempts = underWay.get(tenantId) ?? new Set();
  const slow = [...attempts].some(({ startedAt }) => now - startedAt > SLOW_AFTER_MS);
  if (attempts.size >= (slow ? SLOW_ATTEMPTS_PER_TENANT : QUICK_ATTEMPTS_PER_TENANT)) return undefined;
  const attempt = { startedAt: now };
  underWay.set(tenantId, attempts.add(attempt));
  return () => {
    attempts.delete(attempt);
    if (attempts.size === 0 && underWay.get(tenantId) === attempts) underWay.delete(tenantId);
  };
}

/**
 * How long a message waits on the queue before it looks for its tenant's turn again, the `waited`th
 * time it found none: 1 s, then twice as long each time, up to a minute. A receiver that hangs keeps
 * its tenant's turns for 10 s at a time, and what waits behind it comes back seldom.
 */
export function turnWaitSeconds(waited: number): number {
  return Math.min(2 ** (waited - 1), LONGEST_WAIT_SECONDS);
}
