/**
 * The functions an app registered: what `app.http`, `app.storageQueue` and the like hand to
 * `@azure/functions-core`, the module the Functions host supplies. The local host supplies its own
 * (local/functions-core, on NODE_PATH), and reads the registrations back from it.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import functions, { type InvocationContextInit } from '@azure/functions';

// The library's classes are not visible to ESM's named-import detection, so they come from the default export.
const { InvocationContext } = functions;

export type LogFunction = (functionName: string, level: string, message: string) => void;

export interface Registration {
  metadata: {
    name: string;
    bindings: Record<
      string,
      {
        name: string;
        type: string;
        direction: string;
        route?: string;
        methods?: string[];
        queueName?: string;
        connection?: string;
        schedule?: string;
        runOnStartup?: boolean;
        databaseName?: string;
        containerName?: string;
        leaseConnection?: string;
        leaseDatabaseName?: string;
        leaseContainerName?: string;
        leaseContainerPrefix?: string;
        createLeaseContainerIfNotExists?: boolean;
        feedPollDelay?: number;
        leaseAcquireInterval?: number;
        leaseExpirationInterval?: number;
        leaseRenewInterval?: number;
        maxItemsPerInvocation?: number;
        startFromBeginning?: boolean;
        startFromTime?: string;
      }
    >;
    /** The function's retry policy, as `@azure/functions` hands it to the host: durations in whole seconds. */
    retryOptions?: RetryOptions;
  };
  callback: (...args: unknown[]) => unknown;
}

export type Binding = Registration['metadata']['bindings'][string];

export interface RetryOptions {
  retryStrategy: 'fixedDelay' | 'exponentialBackoff';
  /** -1: retry without end. */
  maxRetryCount: number;
  delayInterval?: { seconds: number };
  minimumInterval?: { seconds: number };
  maximumInterval?: { seconds: number };
}

const require = createRequire(import.meta.url);

/** Every function registered so far. Resolved through NODE_PATH, so this is the very module instance `@azure/functions` registers with. */
export function registrations(): Registration[] {
  return (require('@azure/functions-core') as { registrations: Registration[] }).registrations;
}

/** Runs the app's `app.hook.appStart` handlers, as the worker does once it has loaded the app. */
export async function runAppStartHooks(): Promise<void> {
  const { hooks } = require('@azure/functions-core') as { hooks: { hookName: string; callback: (context: object) => unknown }[] };
  for (const hook of hooks) if (hook.hookName === 'appStart') await hook.callback({ hookData: {} });
}

/** Replaces each `%NAME%` with that app setting, as Azure resolves binding expressions. */
export function resolveBindingExpression(expression: string, environment: Record<string, string | undefined>): string {
  return expression.replace(/%([^%]+)%/g, (_, name: string) => {
    const value = environment[name]?.trim();
    if (!value) throw new Error(`'%${name}%' does not resolve to a value`);
    return value;
  });
}

/** The function's trigger binding of that type (`httpTrigger`, `queueTrigger`), if it has one. */
export function triggerOf(registration: Registration, type: string): Binding | undefined {
  return Object.values(registration.metadata.bindings).find((binding) => binding.type.toLowerCase() === type.toLowerCase());
}

/** The registrations not switched off by an app setting `AzureWebJobs.<function name>.Disabled` = `true`, as Azure's host leaves such a function out. */
export function enabled(all: Registration[], environment: Record<string, string | undefined>): Registration[] {
  const disabled = new Set(
    Object.entries(environment)
      .filter(([name, value]) => /^AzureWebJobs\..+\.Disabled$/i.test(name) && value?.trim().toLowerCase() === 'true')
      .map(([name]) => name.slice('AzureWebJobs.'.length, -'.Disabled'.length).toLowerCase()),
  );
  return all.filter((registration) => !disabled.has(registration.metadata.name.toLowerCase()));
}

/** The InvocationContext the Node worker hands a function: its trigger binding, its log lines to `log`, and what its trigger adds. */
export function invocationContext(name: string, trigger: object, log: LogFunction, init: Partial<InvocationContextInit> = {}) {
  return new InvocationContext({
    invocationId: randomUUID(),
    functionName: name,
    options: { trigger: trigger as never, extraInputs: [], extraOutputs: [] },
    logHandler: (level, ...args) => log(name, level, args.map(String).join(' ')),
    ...init,
  });
}
