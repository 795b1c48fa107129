import { describe, expect, it } from 'vitest';
import { Cron } from 'croner';
import { NCRONTAB } from '../../../local/host/timer-triggers.js';

const next = (expression: string, after: string) => new Cron(expression, NCRONTAB).nextRun(new Date(after))!.toISOString();

describe('NCRONTAB schedules, as the timer trigger reads them', () => {
  it('name seconds, steps, ranges and lists', () => {
    expect(next('*/30 * * * * *', '2026-11-24T10:00:10.500Z')).toBe('2026-11-24T10:00:30.000Z');
    expect(next('0 * * * * *', '2026-11-24T10:00:00.000Z')).toBe('2026-11-24T10:01:00.000Z');
    expect(next('0 15,45 9-17 * * *', '2026-11-24T17:50:00.000Z')).toBe('2026-11-25T09:15:00.000Z');
    expect(next('5/20 * * * * *', '2026-11-24T10:00:26.000Z')).toBe('2026-11-24T10:00:45.000Z');
  });

  it('name months and days of the week by number or by name, either day matching when both are given', () => {
    expect(next('0 0 9 * * Mon', '2026-11-24T10:00:00.000Z')).toBe('2026-11-30T09:00:00.000Z');
    expect(next('0 0 0 1 Jan *', '2026-11-24T10:00:00.000Z')).toBe('2027-01-01T00:00:00.000Z');
    expect(next('0 0 0 13 * 5', '2026-11-24T10:00:00.000Z')).toBe('2026-11-27T00:00:00.000Z');
  });

  it('refuse what is not a schedule of six fields', () => {
    for (const expression of ['* * * * *', '61 * * * * *', '* * * * 13 *', 'x * * * * *', '*/0 * * * * *']) {
      expect(() => new Cron(expression, NCRONTAB), expression).toThrow();
    }
  });
});
