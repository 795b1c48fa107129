import { ConfigurationError } from '../errors.js';
import { SETTINGS } from '../settings/catalog.js';

const DURATION = /^(\d{1,9})(ms|s|m|h)$/;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/**
 * `WEBHOOKS_RETRY_SCHEDULE` as the waits before each retry of a delivery, in milliseconds: durations
 * such as 5s, 10m or 2h, comma-separated. Unset or blank is the contract's schedule (5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h and 10 h); any item that is not a duration, an empty one included, is a
 * configuration error naming the item, never a fallback.
 */
export function parseRetrySchedule(value: string | undefined): number[] {
  return durations(value?.trim() ? value : SETTINGS.WEBHOOKS_RETRY_SCHEDULE.default).map((duration) => {
    const match = DURATION.exec(duration);
    if (!match) throw new ConfigurationError([`WEBHOOKS_RETRY_SCHEDULE has "${duration}", which is not a duration such as 5s, 10m or 2h`]);
    return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  });
}

/** The items between the commas, each of which must be a duration: an empty one (`1s,,2s`, a trailing comma) is not. */
function durations(value: string): string[] {
  return value.split(',').map((item) => item.trim());
}
