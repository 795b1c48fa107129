/** The functions an app registers with `@azure/functions-core` (locally local/host/functions-core, on NODE_PATH), and what the host does with each. */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import functions, {
  type CosmosDBv4TriggerOptions,
  type HttpTriggerOptions,
  type InvocationContextInit,
  type StorageQueueTriggerOptions,
  type TimerTriggerOptions,
} from '@azure/functions';
import { DefaultAzureCredential, ManagedIdentityCredential, type TokenCredential } from '@azure/identity';
import { glob } from 'tinyglobby';
import { z } from 'zod';

// The library's classes are not visible to ESM's named-import detection, so they come from the default export.
const { InvocationContext } = functions;

export type LogFunction = (functionName: string, level: string, message: string) => void;
export type Environment = Record<string, string | undefined>;

export interface Registration {
  metadata: {
    name: string;
    bindings: Record<string, Binding>;
    /** The function's retry policy, as `@azure/functions` hands it to the host: durations in whole seconds. */
    retryOptions?: RetryOptions;
  };
  callback: (...args: unknown[]) => unknown;
}

/** A binding as registered: the options of its trigger (`app.http`, `app.storageQueue`, …), with its type, direction and name. */
export type Binding = { name: string; type: string; direction: string } & Partial<
  HttpTriggerOptions & StorageQueueTriggerOptions & TimerTriggerOptions & CosmosDBv4TriggerOptions
>;

export interface RetryOptions {
  retryStrategy: 'fixedDelay' | 'exponentialBackoff';
  /** -1: retry without end. */
  maxRetryCount: number;
  delayInterval?: { seconds: number };
  minimumInterval?: { seconds: number };
  maximumInterval?: { seconds: number };
}

// Resolved through NODE_PATH, so this is the very module instance `@azure/functions` registers with.
const functionsCore = () =>
  createRequire(import.meta.url)('@azure/functions-core') as {
    registrations: Registration[];
    hooks: { hookName: string; callback: (context: object) => unknown }[];
  };

/** Every function registered so far. */
export const registrations = (): Registration[] => functionsCore().registrations;

/** The files of package.json's `main`, a path or a glob, as the worker resolves them (with globby; here tinyglobby), in name order. */
export async function appFiles(appRoot: string): Promise<string[]> {
  const { main } = JSON.parse(await readFile(join(appRoot, 'package.json'), 'utf8')) as { main?: string };
  if (!main) throw new Error('package.json has no "main": the host would find no functions');
  const files = await glob(main, { cwd: appRoot, absolute: true });
  if (files.length === 0) throw new Error(`Found zero files matching package.json's "main": ${main}`);
  return files.sort();
}

/** Loads the app as the worker does (every file of `main`, then the `appStart` hooks): its functions but those `AzureWebJobs.<name>.Disabled` switches off. */
export async function loadApp(appRoot: string, environment: Environment): Promise<Registration[]> {
  for (const file of await appFiles(appRoot)) await import(pathToFileURL(file).href);
  for (const hook of functionsCore().hooks) if (hook.hookName === 'appStart') await hook.callback({ hookData: {} });
  const trueSettings = new Set(Object.entries(environment).flatMap(([name, value]) => (value?.trim().toLowerCase() === 'true' ? [name.toLowerCase()] : [])));
  return registrations().filter(({ metadata }) => !trueSettings.has(`azurewebjobs.${metadata.name.toLowerCase()}.disabled`));
}

/** Replaces each `%NAME%` with that app setting, as Azure resolves binding expressions. */
export function resolveBindingExpression(expression: string, environment: Environment): string {
  return expression.replace(/%([^%]+)%/g, (_, name: string) => {
    const value = environment[name]?.trim();
    if (!value) throw new Error(`'%${name}%' does not resolve to a value`);
    return value;
  });
}

/** The value as the schema reads it; else an error that names `what` was read. */
export function parsed<Schema extends z.ZodType>(schema: Schema, value: unknown, what: string): z.output<Schema> {
  const result = schema.safeParse(value);
  if (!result.success) throw new Error(`${what}: ${z.prettifyError(result.error)}`);
  return result.data;
}

/**
 * A binding's `connection`: the app setting of that name (a connection string), else the identity-based `<connection>__<property>`
 * (a URI), signed in as Azure's host signs in: `__credential=managedidentity` is the managed identity, the user-assigned one
 * `__clientId` names or else the system-assigned one; without it, DefaultAzureCredential, with `__clientId` as its managed identity.
 */
export function connectionSetting(
  connection: string,
  property: string,
  environment: Environment,
): { connectionString: string } | { uri: string; credential: TokenCredential } {
  const connectionString = environment[connection]?.trim();
  if (connectionString) return { connectionString };
  const [uri, credential, clientId] = [property, 'credential', 'clientId'].map((name) => environment[`${connection}__${name}`]?.trim() || undefined);
  if (!uri) throw new Error(`neither ${connection} nor ${connection}__${property} is set`);
  if (credential?.toLowerCase() === 'managedidentity') return { uri, credential: new ManagedIdentityCredential({ clientId }) };
  return { uri, credential: new DefaultAzureCredential({ managedIdentityClientId: clientId }) };
}

/** The function's trigger binding of that type (`httpTrigger`, `queueTrigger`), if it has one. */
export function triggerOf(registration: Registration, type: string): Binding | undefined {
  return Object.values(registration.metadata.bindings).find((binding) => binding.type.toLowerCase() === type.toLowerCase());
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

/** The error's message alone, for a one-line warning. */
export const errorMessage = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** One invocation, its outcome logged as Azure's host logs it (a success only at debug level when `quiet`): the result, or undefined when it threw. */
export async function invoke<T>(context: InstanceType<typeof InvocationContext>, run: () => Promise<T> | T, quiet = false): Promise<{ result: T } | undefined> {
  const started = Date.now();
  const executed = (outcome: string) =>
    `Executed 'Functions.${context.functionName}' (${outcome}, Id=${context.invocationId}, Duration=${Date.now() - started}ms)`;
  try {
    const result = await run();
    context[quiet ? 'debug' : 'info'](executed('Succeeded'));
    return { result };
  } catch (error) {
    context.error(`${executed('Failed')}\n${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return undefined;
  }
}

/** Waits `ms`, or less when `signal` aborts: true when the whole wait passed. */
export const pause = (ms: number, signal: AbortSignal): Promise<boolean> => sleep(ms, true, { signal, ref: false }).catch(() => false);

/** What the trigger listeners get from the host: the app's functions, its settings, and where their log lines go. */
export interface TriggerHost {
  registrations: Registration[];
  environment: Environment;
  log: LogFunction;
}

export interface Started<Info> {
  info: Info;
  stop(): Promise<void>;
}

export interface Triggers<Info extends { name: string }> {
  /** The functions listening (one whose binding cannot be used is logged and left out, as Azure's host does). */
  functions: Info[];
  /** Stops them and waits, at most `graceMs`, for the invocations under way. */
  stop(graceMs: number): Promise<void>;
}

/** Starts every function whose trigger is of `type`: `start` returns what it listens to, and how to stop it once its invocations are done. */
export async function startTriggers<Info extends { name: string }>(
  { registrations, log }: TriggerHost,
  type: string,
  start: (registration: Registration, trigger: Binding) => Promise<Started<Info>> | Started<Info>,
): Promise<Triggers<Info>> {
  const started: Started<Info>[] = [];
  for (const registration of registrations) {
    const trigger = triggerOf(registration, type);
    if (!trigger) continue;
    try {
      started.push(await start(registration, trigger));
    } catch (error) {
      const { name } = registration.metadata;
      log(name, 'error', `The '${name}' function is in error: ${errorMessage(error)}`);
    }
  }
  const stopWithin = async (graceMs: number, each: Started<Info>) => {
    if (!(await Promise.race([each.stop().then(() => true), sleep(graceMs, false, { ref: false })]))) {
      log(each.info.name, 'warning', `Stopping with invocations still running after ${graceMs} ms`);
    }
  };
  return {
    functions: started.map(({ info }) => info),
    stop: async (graceMs) => void (await Promise.all(started.map((each) => stopWithin(graceMs, each)))),
  };
}
