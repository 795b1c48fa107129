/**
 * Where a read's and a create's time goes, without HTTP on either side. In this one process, 32 calls
 * at a time, the CPU time per call of:
 * - the local host's objects for a request (`HttpRequest`, `InvocationContext`) and its answer,
 *   around a fixed result;
 * - the app's `projects-get` and `projects-create` functions (the built bundle, as the host runs it)
 *   with those objects;
 * - the floor's work for the same requests (bench/floor-work.ts).
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

const WARM_UP_CALLS = 3_000;
const CALLS = 6_000;
const ROUNDS = 3;
const CREATE_BODY = JSON.stringify({ name: 'Load' });

export interface InProcessCosts {
  /** Microseconds of CPU per call, the median of the rounds. */
  hostObjectsUs: number;
  functionUs: number;
  floorWorkUs: number;
  createFunctionUs: number;
  floorCreateUs: number;
}

const { BENCH_URL: target = '', BENCH_AUTHORIZATION: authorization = '' } = process.env;
const url = new URL(target);
const collection = new URL(url.href.slice(0, url.href.lastIndexOf('/')));
const projectId = url.pathname.split('/').pop()!;

/** A function as the host finds it: registered by its file of the bundle, with its binding. */
async function hostedFunction(name: string) {
  await import(new URL(`../app/functions/${name}.js`, import.meta.url).href);
  const registration = registrations().find(({ metadata }) => metadata.name === name)!;
  return { name, handler: registration.callback as HttpHandler, trigger: triggerOf(registration, 'httpTrigger')! };
}
const read = await hostedFunction('projects-get');
const create = await hostedFunction('projects-create');
const ignoreLog = () => undefined;

function invocation({ name, trigger }: typeof read, method: 'GET' | 'POST') {
  const headers = Object.entries({
    host: url.host,
    authorization,
    connection: 'keep-alive',
    ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
  });
  return method === 'GET'
    ? httpInvocation({ functionName: name, trigger, url, method, headers, params: { projectId }, log: ignoreLog })
    : httpInvocation({ functionName: name, trigger, url: collection, method, headers, params: {}, body: Buffer.from(CREATE_BODY), log: ignoreLog });
}

async function call(hosted: typeof read, method: 'GET' | 'POST'): Promise<HttpResponseInit> {
  const result = (await hosted.handler(...invocation(hosted, method))) as HttpResponseInit;
  await answerTo(result);
  return result;
}

const fixedResult = await call(read, 'GET');
if (fixedResult.status !== 200) throw new Error(`${read.name} answered ${fixedResult.status}`);
const created = await call(create, 'POST');
if (created.status !== 201) throw new Error(`${create.name} answered ${created.status}`);

const variants: Record<keyof InProcessCosts, () => Promise<unknown>> = {
  hostObjectsUs: () => {
    invocation(read, 'GET');
    return answerTo(fixedResult);
  },
  functionUs: () => call(read, 'GET'),
  floorWorkUs: () => floorWork({ method: 'GET', url, authorization, text: () => Promise.resolve('') }).then((answer) => JSON.stringify(answer.document)),
  createFunctionUs: () => call(create, 'POST'),
  floorCreateUs: () =>
    floorWork({ method: 'POST', url: collection, authorization, text: () => Promise.resolve(CREATE_BODY) }).then((answer) => JSON.stringify(answer.document)),
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
const names = (process.env.BENCH_VARIANT ? [process.env.BENCH_VARIANT] : Object.keys(variants)) as (keyof InProcessCosts)[];
for (const name of names) await cpuPerCall(variants[name], WARM_UP_CALLS);
const samples = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<keyof InProcessCosts, number[]>;
// Taking turns, so that a drift of the machine's speed touches every variant alike.
for (let round = 0; round < ROUNDS; round++) for (const name of names) samples[name].push(await cpuPerCall(variants[name], CALLS));

const costs = Object.fromEntries(names.map((name) => [name, Math.round(median(samples[name]))])) as unknown as InProcessCosts;
process.send?.(costs, () => process.exit(0));
