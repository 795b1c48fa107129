/**
 * The attempts under way in this instance, per tenant, so that a tenant's slow or hanging receivers
 * hold a few of the instance's queue invocations (host.json's batchSize plus newBatchThreshold) and
 * another tenant's attempts never wait behind them. A tenant whose receivers answer quickly may have
 * up to QUICK_ATTEMPTS_PER_TENANT attempts under way, as a burst of its events needs; one attempt more
 * waits here for a turn, which such a tenant gives back within moments. Once one of its receivers has
 * kept an attempt waiting longer than SLOW_AFTER_MS, the tenant may have SLOW_ATTEMPTS_PER_TENANT:
 * an attempt more gets no turn, and its message goes back to the queue (turnWaitSeconds). It stays slow
 * for SLOW_REMEMBERED_MS after such an attempt ends, so that a hanging receiver is not handed the quick
 * bound again each time its attempts run out together. Counted here
 * by hand: the libraries that bound work by key (p-limit and its kin) queue what is over the bound
 * without limit, and what is over a slow tenant's bound must not wait in an invocation.
 */

/**
 * host.json's newBatchThreshold: the host fetches more messages while no more than that many are being
 * handled, so the attempts one tenant starts before its receiver is known to hang never stop it.
 */
export const QUICK_ATTEMPTS_PER_TENANT = 24;
export const SLOW_ATTEMPTS_PER_TENANT = 4;
/** A receiver that keeps an attempt waiting longer than this is slow: one that answers at all mostly answers well within it. */
export const SLOW_AFTER_MS = 1_000;
/** How long a tenant stays slow after an attempt of its that was slow has ended. */
export const SLOW_REMEMBERED_MS = 60_000;
/** How long an attempt of a quick tenant waits for one of its turns before its message goes back to the queue. */
export const QUICK_TURN_WAIT_MS = 1_000;
/** The longest a message waits on the queue for its tenant's turn before it looks again. */
const LONGEST_WAIT_SECONDS = 60;

/** One attempt's turn: when its receiver was called, once it was, and how to give the turn back when the attempt ends. */
export interface TenantTurn {
  calling(at?: number): void;
  giveBack(at?: number): void;
}

interface Tenant {
  /** The time each turn's receiver was called, or undefined before it is. */
  turns: Set<{ callingSince: number | undefined }>;
  /** Attempts waiting for a turn, first come first served: each is handed a turn, or undefined when the tenant turns slow. */
  waiting: ((turn: TenantTurn | undefined) => void)[];
  /** Until when the tenant counts as slow, whatever its turns under way: a slow attempt of its ended recently. */
  slowUntil: number;
}

const tenants = new Map<string, Tenant>();

const slowAt = (callingSince: number | undefined, now: number) => callingSince !== undefined && now - callingSince > SLOW_AFTER_MS;
const isSlow = (tenant: Tenant, now: number) => tenant.slowUntil > now || [...tenant.turns].some(({ callingSince }) => slowAt(callingSince, now));

/** Forgets a tenant with nothing under way or waiting once it is no longer slow, now or (a timer that keeps no process alive) when that time comes. */
function forgetWhenIdle(tenantId: string, tenant: Tenant, now: number): void {
  if (tenant.turns.size > 0 || tenant.waiting.length > 0 || tenants.get(tenantId) !== tenant) return;
  if (tenant.slowUntil <= now) tenants.delete(tenantId);
  else setTimeout(() => forgetWhenIdle(tenantId, tenant, Date.now()), tenant.slowUntil - now).unref();
}

function turnOf(tenantId: string, tenant: Tenant): TenantTurn {
  const turn = { callingSince: undefined as number | undefined };
  tenant.turns.add(turn);
  let given = false;
  return {
    calling: (at = Date.now()) => void (turn.callingSince = at),
    giveBack(at = Date.now()) {
      if (given) return;
      given = true;
      tenant.turns.delete(turn);
      if (slowAt(turn.callingSince, at)) tenant.slowUntil = at + SLOW_REMEMBERED_MS;
      const slow = isSlow(tenant, at);
      // A slow tenant's waiting attempts go back to the queue; a quick one's next takes the turn given back.
      for (const next of slow ? tenant.waiting.splice(0) : tenant.waiting.splice(0, 1)) next(slow ? undefined : turnOf(tenantId, tenant));
      forgetWhenIdle(tenantId, tenant, at);
    },
  };
}

/**
 * A turn for one attempt of the tenant's; undefined when it is to go back to the queue: the tenant is
 * slow and has all its turns, or is quick and none came back within `waitMs`.
 */
export async function takeTurn(tenantId: string, { now = Date.now(), waitMs = QUICK_TURN_WAIT_MS } = {}): Promise<TenantTurn | undefined> {
  let tenant = tenants.get(tenantId);
  if (!tenant) tenants.set(tenantId, (tenant = { turns: new Set(), waiting: [], slowUntil: 0 }));
  const slow = isSlow(tenant, now);
  if (tenant.turns.size < (slow ? SLOW_ATTEMPTS_PER_TENANT : QUICK_ATTEMPTS_PER_TENANT)) return turnOf(tenantId, tenant);
  if (slow) return undefined;
  const waiting = tenant.waiting;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiting.splice(waiting.indexOf(handOver), 1);
      resolve(undefined);
    }, waitMs);
    const handOver = (turn: TenantTurn | undefined) => {
      clearTimeout(timer);
      resolve(turn);
    };
    waiting.push(handOver);
  });
}

/**
 * How long a message waits on the queue before it looks for its tenant's turn again, the `waited`th
 * time it found none: 1 s, then twice as long each time, up to a minute. A receiver that hangs keeps
 * its tenant's turns for 10 s at a time, and what waits behind it comes back seldom.
 */
export function turnWaitSeconds(waited: number): number {
  return Math.min(2 ** (waited - 1), LONGEST_WAIT_SECONDS);
}
