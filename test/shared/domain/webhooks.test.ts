import { describe, expect, it } from 'vitest';
import type { EventType } from '../../../shared/schemas/events.js';
import { parseRetrySchedule } from '../../../shared/settings/read.js';
import {
  afterAttempt,
  afterDeliveryEnd,
  assertActive,
  changed,
  DISABLED_BECAUSE,
  FAILED_DELIVERIES_TO_DISABLE,
  freeSlot,
  MAX_SIGNING_SECRETS,
  receives,
  rotated,
  signingSecrets,
  type SubscriptionState,
} from '../../../shared/domain/webhooks.js';

const NOW = Date.now();
const iso = (at: number) => new Date(at).toISOString();

function subscriptionOf(fields: Partial<SubscriptionState> = {}): SubscriptionState {
  return {
    ...{ id: 'WHK-1', events: ['project.created'], active: true, disabledReason: null, createdAt: '2026-11-01T00:00:00.000Z' },
    ...{ secret: 'whsec_now', retiredSecrets: [], failedInARow: 0 },
    ...fields,
  };
}

describe('a delivery attempt', () => {
  const now = Date.parse('2026-03-01T12:00:00.000Z');
  const schedule = [1_000, 2_000];

  it('succeeds on every 2xx and on nothing else', () => {
    for (const status of [200, 201, 204, 299])
      expect(afterAttempt(1, status, schedule, now)).toEqual({ status: 'Succeeded', nextAttemptAt: null, gone: false });
    for (const status of [199, 300, 301, 404, 500]) expect(afterAttempt(1, status, schedule, now).status).toBe('Pending');
  });

  it('ends the delivery and its subscription on a 410', () => {
    expect(afterAttempt(1, 410, schedule, now)).toEqual({ status: 'Failed', nextAttemptAt: null, gone: true });
  });

  it('fails once the schedule is used up', () => {
    expect(afterAttempt(3, 500, schedule, now)).toEqual({ status: 'Failed', nextAttemptAt: null, gone: false });
    expect(afterAttempt(3, undefined, schedule, now)).toEqual({ status: 'Failed', nextAttemptAt: null, gone: false });
  });

  it('uses the current time when none is given', () => {
    const before = Date.now();
    const after = afterAttempt(1, 500, [60_000]);
    expect(Date.parse(after.nextAttemptAt!)).toBeGreaterThanOrEqual(before + 60_000);
    expect(Date.parse(after.nextAttemptAt!)).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it('turns a subscription off after three failed deliveries, saying why', () => {
    expect(FAILED_DELIVERIES_TO_DISABLE).toBe(3);
    expect(DISABLED_BECAUSE).toEqual({ gone: 'The receiver answered 410 Gone.', failing: '3 deliveries in a row failed.' });
  });
});

describe('who receives an event', () => {
  const event = (fields: { eventType?: EventType; timestamp?: string; webhookId?: string } = {}) => ({
    eventType: 'project.created' as EventType,
    timestamp: '2026-11-02T00:00:00.000Z',
    ...fields,
  });

  it('is an active subscription to the event’s type made at or before the event', () => {
    expect(receives(subscriptionOf(), event())).toBe(true);
    expect(receives(subscriptionOf({ createdAt: '2026-11-02T00:00:00.000Z' }), event())).toBe(true);
    expect(receives(subscriptionOf({ events: ['task.created', 'project.created'] }), event())).toBe(true);
  });

  it('is never a subscription switched off, to other events, or made after the event', () => {
    expect(receives(subscriptionOf({ active: false }), event())).toBe(false);
    expect(receives(subscriptionOf({ events: ['project.updated', 'task.created'] }), event())).toBe(false);
    expect(receives(subscriptionOf({ createdAt: '2026-11-02T00:00:00.001Z' }), event())).toBe(false);
  });

  it('is, for a ping, only the subscription pinged, whatever its events, and never when it is switched off', () => {
    const pinged = subscriptionOf({ id: 'WHK-7', events: ['task.deleted'], createdAt: '2026-11-03T00:00:00.000Z' });
    const ping = event({ eventType: 'webhook.ping', webhookId: pinged.id });
    expect(receives(pinged, ping)).toBe(true);
    expect(receives(subscriptionOf({ events: ['webhook.ping'] }), ping)).toBe(false);
    expect(receives({ ...pinged, active: false }, ping)).toBe(false);
    // A change's event names no subscription, even one the subscription asked for.
    expect(receives(pinged, event({ eventType: 'task.deleted', webhookId: 'WHK-0' }))).toBe(false);
  });

  it('sends a ping or a retry to an active subscription only', () => {
    expect(() => assertActive(subscriptionOf())).not.toThrow();
    expect(() => assertActive(subscriptionOf({ active: false }))).toThrow(
      expect.objectContaining({ refusal: 'conflict', messageKey: 'webhookInactive', params: { id: 'WHK-1' } }),
    );
  });
});

describe("a tenant's slots", () => {
  it('are picked among the free ones, and are a conflict naming the limit once all 20 are taken', () => {
    expect(freeSlot(new Set([1, 2]), () => 0)).toBe(3);
    expect(freeSlot(new Set([1, 2]), () => 0.999)).toBe(20);
    const all = new Set(Array.from({ length: 20 }, (_, index) => index + 1));
    expect(() => freeSlot(all)).toThrow(expect.objectContaining({ refusal: 'conflict', messageKey: 'tooManyWebhooks', params: { limit: 20 } }));
  });
});

describe('the secrets that sign', () => {
  it('are the current one and every replaced one until its day is over', () => {
    const subscription = subscriptionOf({
      retiredSecrets: [
        { secret: 'whsec_live', until: iso(NOW + 1) },
        { secret: 'whsec_stale', until: iso(NOW) },
      ],
    });
    expect(signingSecrets(subscription, NOW)).toEqual(['whsec_now', 'whsec_live']);
    expect(signingSecrets(subscription, NOW + 1)).toEqual(['whsec_now']);
  });

  it('after a rotation: the new one, the one it replaced for a day, and those still signing; expired ones are dropped', () => {
    const current = subscriptionOf({
      retiredSecrets: [
        { secret: 'whsec_live', until: iso(NOW + 1) },
        { secret: 'whsec_stale', until: iso(NOW - 1) },
      ],
    });
    expect(rotated(current, 'whsec_new', NOW)).toEqual({
      secret: 'whsec_new',
      retiredSecrets: [
        { secret: 'whsec_now', until: iso(NOW + 24 * 60 * 60 * 1000) },
        { secret: 'whsec_live', until: iso(NOW + 1) },
      ],
    });
  });

  it(`are at most ${MAX_SIGNING_SECRETS}: a rotation that would make more is a conflict`, () => {
    const signing = (count: number) => Array.from({ length: count }, (_, index) => ({ secret: `whsec_${index}`, until: iso(NOW + 1) }));
    expect(rotated(subscriptionOf({ retiredSecrets: signing(48) }), 'whsec_new', NOW).retiredSecrets).toHaveLength(49);
    expect(() => rotated(subscriptionOf({ retiredSecrets: signing(49) }), 'whsec_new', NOW)).toThrow(
      expect.objectContaining({ refusal: 'conflict', messageKey: 'tooManySigningSecrets', params: { limit: 50 } }),
    );
  });
});

describe('a change of a subscription', () => {
  const off = subscriptionOf({ active: false, disabledReason: DISABLED_BECAUSE.gone, failedInARow: 2, failedDeliveryIds: ['a', 'b'] });

  it('switching it on or off forgets why it went off and its failures; the same `active` switches nothing', () => {
    expect(changed(off, { active: true }, 'now')).toMatchObject({
      active: true,
      disabledReason: null,
      failedInARow: 0,
      failedDeliveryIds: [],
      updatedAt: 'now',
    });
    expect(changed(off, { active: false, description: 'x' }, 'now')).toMatchObject({
      disabledReason: DISABLED_BECAUSE.gone,
      failedInARow: 2,
      description: 'x',
    });
  });
});

describe('the end of a delivery', () => {
  const failed = { status: 'Failed', nextAttemptAt: null, gone: false } as const;
  const succeeded = { status: 'Succeeded', nextAttemptAt: null, gone: false } as const;

  it('a success clears the failures, and leaves a subscription without any as it is', () => {
    const clean = subscriptionOf();
    expect(afterDeliveryEnd(clean, 'd1', succeeded, 'now')).toBe(clean);
    expect(afterDeliveryEnd(subscriptionOf({ failedInARow: 2, failedDeliveryIds: ['a', 'b'] }), 'd1', succeeded, 'now')).toMatchObject({
      failedInARow: 0,
      failedDeliveryIds: [],
    });
  });

  it(`turns it off at the ${FAILED_DELIVERIES_TO_DISABLE}rd failure in a row, counting a delivery that fails again once`, () => {
    let subscription = subscriptionOf();
    for (const id of ['a', 'b', 'b']) subscription = afterDeliveryEnd(subscription, id, failed, 'now');
    expect(subscription).toMatchObject({ active: true, failedInARow: 2, failedDeliveryIds: ['a', 'b'] });
    subscription = afterDeliveryEnd(subscription, 'c', failed, 'now');
    expect(subscription).toMatchObject({ active: false, disabledReason: DISABLED_BECAUSE.failing, failedInARow: 3, updatedAt: 'now' });
  });

  it('keeps the ids of the last three failures only, and counts one that failed before a success again: the success began a new row', () => {
    let subscription = subscriptionOf();
    for (const id of ['a', 'b', 'c', 'd', 'e']) subscription = afterDeliveryEnd(subscription, id, failed, 'now');
    expect(subscription).toMatchObject({ failedInARow: 5, failedDeliveryIds: ['c', 'd', 'e'] });
    subscription = afterDeliveryEnd(afterDeliveryEnd(subscriptionOf({ failedInARow: 1, failedDeliveryIds: ['a'] }), 'f', succeeded, 'now'), 'a', failed, 'now');
    expect(subscription).toMatchObject({ active: true, failedInARow: 1, failedDeliveryIds: ['a'] });
  });

  it('turns it off at once on a 410, and leaves the reason of one already off', () => {
    expect(afterDeliveryEnd(subscriptionOf(), 'a', { ...failed, gone: true }, 'now')).toMatchObject({ active: false, disabledReason: DISABLED_BECAUSE.gone });
    const off = subscriptionOf({ active: false, disabledReason: 'By hand.' });
    expect(afterDeliveryEnd(off, 'a', { ...failed, gone: true }, 'now')).toMatchObject({ disabledReason: 'By hand.', failedInARow: 1 });
  });
});

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** The contract's schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h. */
const CONTRACT_SCHEDULE = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

describe('each failed attempt, on the retry schedule WEBHOOKS_RETRY_SCHEDULE gives', () => {
  const now = NOW;

  it('is tried again after the scheduled wait, never sooner, until the schedule is used up', () => {
    const schedule = parseRetrySchedule(undefined);
    CONTRACT_SCHEDULE.forEach((wait, index) => {
      const attempt = index + 1;
      const after = afterAttempt(attempt, 500, schedule, now);
      expect(after).toEqual({ status: 'Pending', nextAttemptAt: new Date(now + wait).toISOString(), gone: false });
      expect(Date.parse(after.nextAttemptAt!) - now).toBe(wait);
    });
    expect(afterAttempt(CONTRACT_SCHEDULE.length + 1, 500, schedule, now)).toEqual({ status: 'Failed', nextAttemptAt: null, gone: false });
  });

  it('without an answer waits as a failed status does', () => {
    expect(afterAttempt(2, undefined, [SECOND, MINUTE], now)).toEqual({ status: 'Pending', nextAttemptAt: new Date(now + MINUTE).toISOString(), gone: false });
  });
});
