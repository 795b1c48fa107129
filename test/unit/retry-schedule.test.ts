/** Each failed attempt of a webhook delivery, with the retry schedule WEBHOOKS_RETRY_SCHEDULE gives: tried again that far ahead, until it is used up. */
import { describe, expect, it } from 'vitest';
import { parseRetrySchedule } from '../../shared/settings/read.js';
import { afterAttempt } from '../../shared/domain/webhooks.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** The contract's schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h. */
const CONTRACT_SCHEDULE = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

describe('each failed attempt', () => {
  const now = Date.parse('2026-03-01T12:00:00.000Z');

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
