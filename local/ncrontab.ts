/**
 * NCRONTAB schedules as Azure's timer trigger reads them: six fields, `{second} {minute} {hour}
 * {day} {month} {day-of-week}`, read and run by croner. Times are UTC, as on Azure without
 * WEBSITE_TIME_ZONE; `5/20` (from 5, every 20) is NCRONTAB's, hence sloppyRanges; when both days are
 * restricted, either may match, as in NCRONTAB (croner's default).
 */
import { Cron, type CronOptions } from 'croner';

export const NCRONTAB: CronOptions = { mode: '6-part', timezone: 'UTC', sloppyRanges: true };

export interface Schedule {
  /** The first time after `after` (epoch milliseconds) that the schedule names. */
  next(after: number): number;
}

export function parseSchedule(expression: string): Schedule {
  const cron = new Cron(expression.trim(), NCRONTAB);
  return {
    next(after) {
      const next = cron.nextRun(new Date(after));
      if (!next) throw new Error(`"${expression}" names no time to come`);
      return next.getTime();
    },
  };
}
