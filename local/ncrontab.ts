/**
 * NCRONTAB schedules as Azure's timer trigger reads them: six fields, `{second} {minute} {hour}
 * {day} {month} {day-of-week}`, each `*`, a value, a range `a-b`, a step `*\/n` or `a-b/n`, or a
 * comma-separated list of those; months and days of the week by number or by their English
 * three-letter names. Times are UTC, as on Azure without WEBSITE_TIME_ZONE.
 */
const FIELDS = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] },
  { name: 'day-of-week', min: 0, max: 6, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
] as const;

export interface Schedule {
  /** The first time after `after` (epoch milliseconds) that the schedule names. */
  next(after: number): number;
}

function value(text: string, field: (typeof FIELDS)[number]): number {
  const named = 'names' in field ? (field.names as readonly string[]).indexOf(text.toLowerCase()) : -1;
  const number = named >= 0 ? named + field.min : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(number >= field.min && number <= field.max)) throw new Error(`"${text}" is not a ${field.name} (${field.min}-${field.max})`);
  return number;
}

function parseField(text: string, field: (typeof FIELDS)[number]): { values: Set<number>; any: boolean } {
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const [range = '', stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`"${part}" has no valid step`);
    const [from, to] =
      range === '*' ? [field.min, field.max] : range.includes('-') ? range.split('-').map((bound) => value(bound, field)) : [value(range, field), undefined];
    const last = to ?? (stepText === undefined ? from : field.max);
    for (let number = from; number <= last; number += step) values.add(number);
  }
  return { values, any: text === '*' };
}

export function parseSchedule(expression: string): Schedule {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== FIELDS.length) throw new Error(`"${expression}" is not an NCRONTAB expression of six fields`);
  const [second, minute, hour, day, month, dayOfWeek] = parts.map((part, index) => parseField(part, FIELDS[index]!));
  // As in cron: when both days are restricted, either may match; otherwise both must.
  const dayMatches = (date: Date) =>
    day!.any || dayOfWeek!.any
      ? day!.values.has(date.getUTCDate()) && dayOfWeek!.values.has(date.getUTCDay())
      : day!.values.has(date.getUTCDate()) || dayOfWeek!.values.has(date.getUTCDay());
  return {
    next(after) {
      let time = Math.floor(after / 1000) * 1000 + 1000;
      // Each failing field skips ahead to the start of its next unit; a schedule that names nothing gives up after ten years.
      for (const limit = after + 10 * 366 * 86_400_000; time < limit;) {
        const date = new Date(time);
        if (!month!.values.has(date.getUTCMonth() + 1)) time = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
        else if (!dayMatches(date)) time = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
        else if (!hour!.values.has(date.getUTCHours())) time = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate(), date.getUTCHours() + 1);
        else if (!minute!.values.has(date.getUTCMinutes())) time = Math.floor(time / 60_000) * 60_000 + 60_000;
        else if (!second!.values.has(date.getUTCSeconds())) time += 1000;
        else return time;
      }
      throw new Error(`"${expression}" names no time in the next ten years`);
    },
  };
}
