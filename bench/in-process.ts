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
import { floorWork } from './floor-work.js';

const CONCURRENCY = 32;
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
const appFile = new URL('../app/functions/projects-get.js', import.meta.url).href;
const { projectsGet } = (await import(appFile)) as { projectsGet: HttpHandler };
const trigger = { type: 'httpTrigger', direction: 'in', methods: ['GET'], route: 'projects/{projectId}' };
const ignoreLog = () => undefined;

function invocation() {
  const headers = new Headers({ host: url.host, authorization, connection: 'keep-alive' });
  return httpInvocation({ functionName: 'projects-get', trigger, url, method: 'GET', headers, params: { projectId }, log: ignoreLog });
}

async function callFunction(): Promise<HttpResponseInit> {
  const result = (await projectsGet(...invocation())) as HttpResponseInit;
  await answerTo(result);
  return result;
}

const fixedResult = await callFunction();
if (fixedResult.status !== 200) throw new Error(`projects-get answered ${fixedResult.status}`);

const variants: Record<keyof InProcessCosts, () => Promise<unknown>> = {
  hostObjectsUs: () => {
    invocation();
    return answerTo(fixedResult);
  },
  functionUs: callFunction,
  floorWorkUs: () => floorWork({ method: 'GET', url, authorization, text: async () => '' }),
};

async function cpuPerCall(run: () => Promise<unknown>, calls: number): Promise<number> {
  let started = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
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

const median = (values: number[]): number => Math.round([...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!);
const costs = Object.fromEntries(names.map((name) => [name, median(samples[name])])) as unknown as InProcessCosts;
process.send?.(costs, () => process.exit(0));
