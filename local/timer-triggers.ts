/**
 * Timer triggers the way Azure's Functions host runs them: on the NCRONTAB schedule of the binding
 * (`%SETTING%` resolved from the app settings), one invocation at a time per function (the next
 * occurrence is counted from the end of the last), `runOnStartup` honoured, and the handler given
 * the Timer object the Node worker gives it.
 */
import type { Timer } from '@azure/functions';
import { Cron } from 'croner';
import { NCRONTAB } from './ncrontab.js';
import { invocationContext, resolveBindingExpression, triggerOf, type Binding, type LogFunction, type Registration } from './registrations.js';

/** An occurrence this much late counts as past due, as the worker reports it. */
const PAST_DUE_MS = 1_000;

export interface TimerFunction {
  name: string;
  schedule: string;
}

export interface TimerTriggers {
  functions: TimerFunction[];
  /** Stops scheduling and waits, at most `graceMs`, for the invocations under way. */
  stop(graceMs: number): Promise<void>;
}

/** One timer function on croner's schedule; `protect` skips the occurrences that come while an invocation runs, as Azure's host does. */
function startTimer(name: string, trigger: Binding, schedule: string, handler: Registration['callback'], log: LogFunction) {
  let running: Promise<void> | undefined;
  let last: number | undefined;
  const invoke = async (due: number): Promise<void> => {
    const started = Date.now();
    const timer: Timer = {
      isPastDue: started - due > PAST_DUE_MS,
      schedule: { adjustForDST: true },
      scheduleStatus: {
        last: new Date(last ?? 0).toISOString(),
        next: (cron.nextRun() ?? new Date(0)).toISOString(),
        lastUpdated: new Date(started).toISOString(),
      },
    };
    const context = invocationContext(name, trigger, log);
    const { invocationId } = context;
    try {
      await handler(timer, context);
      log(name, 'debug', `Executed 'Functions.${name}' (Succeeded, Id=${invocationId}, Duration=${Date.now() - started}ms)`);
    } catch (error) {
      log(name, 'error', `Executed 'Functions.${name}' (Failed, Id=${invocationId}): ${error instanceof Error ? error.message : String(error)}`);
    }
    last = started;
  };
  const cron = new Cron(schedule, { ...NCRONTAB, protect: true, paused: Boolean(trigger.runOnStartup) }, (job: Cron) => {
    running = invoke(job.currentRun()?.getTime() ?? Date.now());
    return running;
  });
  if (trigger.runOnStartup) running = invoke(Date.now()).then(() => void cron.resume());
  return {
    async stop(graceMs: number): Promise<void> {
      cron.stop();
      if (running) await Promise.race([running, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    },
  };
}

/** Starts every registration whose trigger is a timer; one whose schedule cannot be read is logged and left out, as Azure does. */
export function startTimerTriggers(options: {
  registrations: Registration[];
  environment: Record<string, string | undefined>;
  log: LogFunction;
}): TimerTriggers {
  const runners: ReturnType<typeof startTimer>[] = [];
  const timerFunctions: TimerFunction[] = [];
  for (const registration of options.registrations) {
    const trigger = triggerOf(registration, 'timerTrigger');
    if (!trigger) continue;
    const { name } = registration.metadata;
    try {
      const schedule = resolveBindingExpression(trigger.schedule ?? '', options.environment);
      runners.push(startTimer(name, trigger, schedule, registration.callback, options.log));
      timerFunctions.push({ name, schedule });
    } catch (error) {
      options.log(name, 'error', `The '${name}' function is in error: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return {
    functions: timerFunctions,
    stop: async (graceMs) => {
      await Promise.all(runners.map((runner) => runner.stop(graceMs)));
    },
  };
}
