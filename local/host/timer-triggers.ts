/** Timer triggers as Azure's Functions host runs them: NCRONTAB schedules, one invocation at a time, `runOnStartup`, the worker's Timer object. */
import type { Timer } from '@azure/functions';
import { Cron, type CronOptions } from 'croner';
import { invocationContext, invoke, resolveBindingExpression, startTriggers, type TriggerHost, type Triggers } from './registrations.js';

/**
 * croner's options for NCRONTAB schedules as Azure's timer trigger reads them: six fields from seconds, in UTC
 * (Azure without WEBSITE_TIME_ZONE), NCRONTAB's `5/20` (from 5, every 20) hence sloppyRanges, and either day
 * matching when both are restricted (croner's default).
 */
export const NCRONTAB: CronOptions = { mode: '6-part', timezone: 'UTC', sloppyRanges: true };
/** An occurrence this much late counts as past due, as the worker reports it. */
const PAST_DUE_MS = 1_000;

export function startTimerTriggers(host: TriggerHost): Promise<Triggers<{ name: string; schedule: string }>> {
  const { environment, log } = host;
  return startTriggers(host, 'timerTrigger', ({ metadata: { name }, callback: handler }, trigger) => {
    const schedule = resolveBindingExpression(trigger.schedule ?? '', environment);
    let running = Promise.resolve();
    let last = 0;
    const run = (due: number): Promise<void> => {
      const started = Date.now();
      const timer: Timer = {
        isPastDue: started - due > PAST_DUE_MS,
        schedule: { adjustForDST: true },
        scheduleStatus: {
          last: new Date(last).toISOString(),
          next: (cron.nextRun() ?? new Date(0)).toISOString(),
          lastUpdated: new Date(started).toISOString(),
        },
      };
      last = started;
      const context = invocationContext(name, trigger, log);
      // A success is not worth a line every few seconds; a failure is.
      running = invoke(context, () => handler(timer, context), true).then(() => undefined);
      return running;
    };
    // `protect` skips the occurrences that come while an invocation runs, as Azure's host does.
    const cron = new Cron(schedule, { ...NCRONTAB, protect: true, paused: Boolean(trigger.runOnStartup) }, (job: Cron) =>
      run(job.currentRun()?.getTime() ?? Date.now()),
    );
    if (trigger.runOnStartup) void run(Date.now()).then(() => cron.resume());
    return {
      info: { name, schedule },
      stop: async () => {
        cron.stop();
        await running;
      },
    };
  });
}
