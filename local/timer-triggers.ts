/**
 * Timer triggers the way Azure's Functions host runs them: on the NCRONTAB schedule of the binding
 * (`%SETTING%` resolved from the app settings), one invocation at a time per function (the next
 * occurrence is counted from the end of the last), `runOnStartup` honoured, and the handler given
 * the Timer object the Node worker gives it.
 */
import { randomUUID } from 'node:crypto';
import functions, { type Timer } from '@azure/functions';
import { parseSchedule, type Schedule } from './ncrontab.js';
import type { LogFunction } from './queue-triggers.js';
import { resolveBindingExpression, triggerOf, type Binding, type Registration } from './registrations.js';

// The library's classes are not visible to ESM's named-import detection, so they come from the default export.
const { InvocationContext } = functions;

/** An occurrence this much late counts as past due, as the worker reports it. */
const PAST_DUE_MS = 1_000;
/** Node's timers hold at most this many milliseconds (about 24.8 days); a longer wait would fire at once. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

export interface TimerFunction {
  name: string;
  schedule: string;
}

export interface TimerTriggers {
  functions: TimerFunction[];
  /** Stops scheduling and waits, at most `graceMs`, for the invocations under way. */
  stop(graceMs: number): Promise<void>;
}

class TimerRunner {
  private timeout: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private last: number | undefined;

  constructor(
    private readonly name: string,
    private readonly trigger: Binding,
    private readonly schedule: Schedule,
    private readonly handler: Registration['callback'],
    private readonly log: LogFunction,
  ) {
    if (trigger.runOnStartup) this.running = this.invoke(Date.now());
    else this.plan();
  }

  private plan(due = this.schedule.next(Date.now())): void {
    if (this.stopped) return;
    const wait = due - Date.now();
    this.timeout = setTimeout(
      () => {
        if (wait > LONGEST_TIMER_MS) this.plan(due);
        else this.running = this.invoke(due);
      },
      Math.min(wait, LONGEST_TIMER_MS),
    );
  }

  private async invoke(due: number): Promise<void> {
    const invocationId = randomUUID();
    const started = Date.now();
    const timer: Timer = {
      isPastDue: started - due > PAST_DUE_MS,
      schedule: { adjustForDST: true },
      scheduleStatus: {
        last: new Date(this.last ?? 0).toISOString(),
        next: new Date(this.schedule.next(started)).toISOString(),
        lastUpdated: new Date(started).toISOString(),
      },
    };
    const context = new InvocationContext({
      invocationId,
      functionName: this.name,
      options: { trigger: this.trigger, extraInputs: [], extraOutputs: [] },
      logHandler: (level, ...args) => this.log(this.name, level, args.map(String).join(' ')),
    });
    try {
      await this.handler(timer, context);
      this.log(this.name, 'debug', `Executed 'Functions.${this.name}' (Succeeded, Id=${invocationId}, Duration=${Date.now() - started}ms)`);
    } catch (error) {
      this.log(this.name, 'error', `Executed 'Functions.${this.name}' (Failed, Id=${invocationId}): ${error instanceof Error ? error.message : String(error)}`);
    }
    this.last = started;
    this.running = undefined;
    this.plan();
  }

  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timeout);
    const running = this.running;
    if (running) await Promise.race([running, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
  }
}

/** Starts every registration whose trigger is a timer; one whose schedule cannot be read is logged and left out, as Azure does. */
export function startTimerTriggers(options: {
  registrations: Registration[];
  environment: Record<string, string | undefined>;
  log: LogFunction;
}): TimerTriggers {
  const runners: TimerRunner[] = [];
  const timerFunctions: TimerFunction[] = [];
  for (const registration of options.registrations) {
    const trigger = triggerOf(registration, 'timerTrigger');
    if (!trigger) continue;
    const { name } = registration.metadata;
    try {
      const schedule = resolveBindingExpression(trigger.schedule ?? '', options.environment);
      runners.push(new TimerRunner(name, trigger, parseSchedule(schedule), registration.callback, options.log));
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
