/**
 * croner's options for NCRONTAB schedules as Azure's timer trigger reads them: six fields from seconds, in UTC
 * (Azure without WEBSITE_TIME_ZONE), NCRONTAB's `5/20` (from 5, every 20) hence sloppyRanges, and either day
 * matching when both are restricted (croner's default).
 */
import type { CronOptions } from 'croner';

export const NCRONTAB: CronOptions = { mode: '6-part', timezone: 'UTC', sloppyRanges: true };
