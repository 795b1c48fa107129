import { describe, expect, it } from 'vitest';
import { afterAttempt, DISABLED_BECAUSE, FAILED_DELIVERIES_TO_DISABLE } from '../../../shared/domain/webhooks.js';

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
