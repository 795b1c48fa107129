/**
 * Where an operation's time goes, without HTTP on either side. In this one process, 32 calls at a time,
 * the CPU time per call of:
 * - the local host's objects for a request (`HttpRequest`, `InvocationContext`) and its answer,
 *   around a fixed result;
 * - each benchmarked operation's function of the app (the built bundle, as the host runs it) with
 *   those objects, and the floor's work for the same request (bench/floor-work.ts).
 * Forked by api-throughput.ts with the app's settings and certificate trust; reports over IPC.
 * `npm run bench -- --only in-process --cpu-prof <dir>` runs each variant alone under `--cpu-prof`:
 * its profile shows where that call's time goes.
 */
import type { HttpHandler, HttpResponseInit } from '@azure/functions';
import { answerTo } from '../local/host/http-answers.js';
import { httpInvocation } from '../local/host/http-invocation.js';
import { registrations, triggerOf } from '../local/host/registrations.js';
import { CONCURRENT_REQUESTS, median } from './figures.js';
import { floorWork } from './floor-work.js';
import { benchedOperations, type BenchedOperation } from './operations.js';

const WARM_UP_CALLS = 3_000;
const CALLS = 6_000;
const ROUNDS = 3;

/** Microseconds of CPU per call, the median of the rounds; null for a variant this run left out (BENCH_VARIANT). */
export interface InProcessCosts {
  hostObjectsUs: number | null;
  operations: { functionName: string; request: string; functionUs: number | null; floorUs: number | null }[];
}

const { BENCH_API: api = '', BENCH_PROJECT_ID: projectId = '', BENCH_AUTHORIZATION: authorization = '' } = process.env;

const OPERATIONS = benchedOperations(projectId);

const ignoreLog = () => undefined;

/** An operation's function as the host finds it: registered by its file of the bundle, with its binding. */
async function hostedFunction(operation: BenchedOperation) {
  await import(new URL(`../app/functions/${operation.functionName}.js`, import.meta.url).href);
  const registration = registrations().find(({ metadata }) => metadata.name === operation.functionName)!;
  const handler = registration.callback as HttpHandler;
  const trigger = triggerOf(registration, 'httpTrigger')!;
  const url = new URL(`${api}${operation.path}`);
  const { body } = operation;
  const headers = Object.entries({ host: url.host, authorization, connection: 'keep-alive', ...(body ? { 'content-type': 'application/json' } : {}) });
  const invocation = () =>
    httpInvocation({
      functionName: operation.functionName,
      trigger,
      url,
      method: operation.method,
      headers,
      params: operation.params,
      ...(body ? { body: Buffer.from(body) } : {}),
      log: ignoreLog,
    });
  return {
    invocation,
    call: async (): Promise<HttpResponseInit> => {
      const result = (await handler(...invocation())) as HttpResponseInit;
      await answerTo(result);
      return result;
    },
    floor: () =>
      floorWork({ method: operation.method, url, authorization, text: () => Promise.resolve(body ?? '') }).then((answer) => JSON.stringify(answer.document)),
  };
}

const variants: Record<string, () => Promise<unknown>> = {};
let fixed: { result: HttpResponseInit; invocation: () => unknown } | undefined;
for (const operation of OPERATIONS) {
  const hosted = await hostedFunction(operation);
  const result = await hosted.call();
  if (result.status !== (operation.method === 'POST' ? 201 : 200)) throw new Error(`${operation.functionName} answered ${result.status}`);
  fixed ??= { result, invocation: hosted.invocation };
  variants[operation.functionName] = hosted.call;
  variants[`${operation.functionName}.floor`] = hosted.floor;
}
variants['host-objects'] = () => {
  fixed!.invocation();
  return answerTo(fixed!.result);
};

async function cpuPerCall(run: () => Promise<unknown>, calls: number): Promise<number> {
  let started = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENT_REQUESTS }, async () => {
      while (started++ < calls) await run();
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}

// BENCH_VARIANT runs one alone: a profile of it shows that variant's calls only.
const names = process.env.BENCH_VARIANT ? [process.env.BENCH_VARIANT] : Object.keys(variants);
const writes = new Set(OPERATIONS.filter(({ method }) => method === 'POST').flatMap(({ functionName }) => [functionName, `${functionName}.floor`]));
const samples = new Map(names.map((name) => [name, [] as number[]]));
// Reads first, then writes, which grow the data the lists read. Within each, taking turns, so that a drift of the machine's speed touches every variant alike.
for (const group of [names.filter((name) => !writes.has(name)), names.filter((name) => writes.has(name))]) {
  for (const name of group) await cpuPerCall(variants[name]!, WARM_UP_CALLS);
  for (let round = 0; round < ROUNDS; round++) for (const name of group) samples.get(name)!.push(await cpuPerCall(variants[name]!, CALLS));
}

const costOf = (name: string) => (samples.has(name) ? Math.round(median(samples.get(name)!)) : null);
const costs: InProcessCosts = {
  hostObjectsUs: costOf('host-objects'),
  operations: OPERATIONS.map(({ functionName, name }) => ({
    functionName,
    request: name,
    functionUs: costOf(functionName),
    floorUs: costOf(`${functionName}.floor`),
  })),
};
process.send?.(costs, () => process.exit(0));
