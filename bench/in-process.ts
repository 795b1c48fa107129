/**
 * Where a read's time goes, without HTTP on either side. In this one process, 32 calls at a time,
 * the CPU time per call of:
 * - the local host's objects for a request (`HttpRequest`, `InvocationContext`) and its answer,
 *   around a fixed result;
 * - the app's `projects-get` function (the built bundle, as the host runs it) with those objects;
 * - the floor's work for the same request (bench/floor-work.ts).
 * Forked by api-throughput.ts with the app's settings and certificate trust; reports over IPC.
 */
import type { HttpHandler, HttpResponseInit } from '@azure/functions';
import { answerTo } from '../local/http-answers.js';
import { httpInvocation } from '../local/http-invocation.js';
import { registrations, triggerOf } from '../local/registrations.js';
import { CONCURRENT_REQUESTS, median } from './figures.js';
import { floorWork } from './floor-work.js';

const FUNCTION_NAME = 'projects-get';
const WARM_UP_CALLS = 3_000;
const CALLS = 6_000;
const ROUNDS = 3;

export interface InProcessCosts {
  /** Microseconds of CPU per call, the median of the rounds. */
  hostObjectsUs: number;
  functionUs: number;
  floorWorkUs: number;
}

const { BENCH_URL: target = '', BENCH_AUTHORIZATION: authorization = '' } = process.env;
const url = new URL(target);
const projectId = url.pathname.split('/').pop()!;
// The function as the host finds it: registered by its file of the bundle, with its binding.
await import(new URL(`../app/functions/${FUNCTION_NAME}.js`, import.meta.url).href);
const registration = registrations().find(({ metadata }) => metadata.name === FUNCTION_NAME)!;
const handler = registration.callback as HttpHandler;
const trigger = triggerOf(registration, 'httpTrigger')!;
const ignoreLog = () => undefined;

function invocation() {
  const headers = Object.entries({ host: url.host, authorization, connection: 'keep-alive' });
  return httpInvocation({ functionName: FUNCTION_NAME, trigger, url, method: 'GET', headers, params: { projectId }, log: ignoreLog });
}

async function callFunction(): Promise<HttpResponseInit> {
  const result = (await handler(...invocation())) as HttpResponseInit;
  await answerTo(result);
  return result;
}

const fixedResult = await callFunction();
if (fixedResult.status !== 200) throw new Error(`${FUNCTION_NAME} answered ${fixedResult.status}`);

const variants: Record<keyof InProcessCosts, () => Promise<unknown>> = {
  hostObjectsUs: () => {
    invocation();
    return answerTo(fixedResult);
  },
  functionUs: callFunction,
  floorWorkUs: () => floorWork({ method: 'GET', url, authorization, text: () => Promise.resolve('') }).then((answer) => JSON.stringify(answer.document)),
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

const names = Object.keys(variants) as (keyof InProcessCosts)[];
for (const name of names) await cpuPerCall(variants[name], WARM_UP_CALLS);
const samples = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<keyof InProcessCosts, number[]>;
// Taking turns, so that a drift of the machine's speed touches every variant alike.
for (let round = 0; round < ROUNDS; round++) for (const name of names) samples[name].push(await cpuPerCall(variants[name], CALLS));

const costs = Object.fromEntries(names.map((name) => [name, Math.round(median(samples[name]))])) as unknown as InProcessCosts;
process.send?.(costs, () => process.exit(0));
