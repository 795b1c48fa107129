/** The webhooks sweep timer's work: deliveries whose attempt nothing carries any more, brought back through the change feed. */
import { bringBack, overdueDeliveries } from '../data/deliveries-repository.js';
import { webhookWorkWaiting } from './queues.js';

/** What the sweep leaves alone while the queue has nothing waiting: attempts this recently due are still on their way through it. */
export const SWEEP_GRACE_MS = 10_000;
/** A delivery the sweep brought back is brought back again if it is still overdue this long after: its message may have been lost too. */
export const SWEEP_AGAIN_MS = 10 * 60_000;
/** The most deliveries one run of the sweep brings back. */
export const SWEEP_LIMIT = 500;

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
