/**
 * The retry schedule of webhook deliveries: the contract's waits by default, the setting's own when
 * given, a clear configuration error for anything else, and each attempt's next try that far ahead.
 */
import { describe, expect, it } from 'vitest';
import { parseRetrySchedule, readWebhookSettings } from '../../shared/settings/read.js';
import { afterAttempt } from '../../shared/domain/webhooks.js';
import { ConfigurationError } from '../../shared/errors.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** The contract's schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h. */
const CONTRACT_SCHEDULE = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

function problemsOf(value: string): string[] {
  try {
    parseRetrySchedule(value);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as ConfigurationError).problems;
  }
  throw new Error(`"${value}" was accepted`);
}

describe('the retry schedule setting', () => {
  it("is the contract's schedule when unset or blank", () => {
    for (const value of [undefined, '', ' ']) expect(parseRetrySchedule(value)).toEqual(CONTRACT_SCHEDULE);
  });

  it('reads each unit, with spaces around the items', () => {
    expect(parseRetrySchedule('250ms, 3s,2m ,1h')).toEqual([250, 3 * SECOND, 2 * MINUTE, HOUR]);
    expect(parseRetrySchedule(' 7s ')).toEqual([7 * SECOND]);
    expect(parseRetrySchedule('0s')).toEqual([0]);
    expect(parseRetrySchedule('999999999ms')).toEqual([999_999_999]);
  });

  it('refuses at start anything that is not a duration, naming the setting and the value', () => {
    for (const bad of ['5', 's', '5 s', '5S', '5d', '-5s', '1.5h', '5s5', 'x5s', '5sec', '1234567890ms', 'five']) {
      expect(problemsOf(`5s,${bad},1h`)).toEqual([`WEBHOOKS_RETRY_SCHEDULE has "${bad}", which is not a duration such as 5s, 10m or 2h`]);
    }
  });

  it('refuses an empty item, as any other that is not a duration: never a schedule with a wait left out', () => {
    for (const bad of ['1s,,2s', '1s, ,2s', ',7s', '7s,', ' , ,', ',']) {
      expect(problemsOf(bad), bad).toEqual(['WEBHOOKS_RETRY_SCHEDULE has "", which is not a duration such as 5s, 10m or 2h']);
    }
  });

  it('is part of the webhook settings, which fail as a whole on a bad schedule', () => {
    expect(readWebhookSettings({}).retrySchedule).toEqual(CONTRACT_SCHEDULE);
    expect(readWebhookSettings({ WEBHOOKS_RETRY_SCHEDULE: '1s,2s' }).retrySchedule).toEqual([SECOND, 2 * SECOND]);
    expect(() => readWebhookSettings({ WEBHOOKS_RETRY_SCHEDULE: '10 minutes' })).toThrow(ConfigurationError);
  });
});

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
