/**
 * Throughput and latency of the API through the local host on the embedded store, next to the
 * floor (bench/floor-server.ts) and to the floor's work served as a function by a second local host
 * (bench/floor-function.ts), for the same requests; the local host's memory over 100,000 requests;
 * and the database requests and request charge of each operation.
 */
import { fork } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { LOCAL_CLIENT_ID, LOCAL_HOME_TENANT_ID } from '../local/defaults.js';
import { appRoot, startHostProcess, startStack, type LocalStack } from '../local/stack.js';
import { BLOCK_SIZE } from '../shared/data/sequence.js';
import { startWebhookReceiver, type WebhookReceiver } from '../tools/webhook-receiver.js';
import { CONCURRENT_REQUESTS, median } from './figures.js';
import type { InProcessCosts } from './in-process.js';
import { benchedOperations, inProcessVariants } from './operations.js';

const DURATION_SECONDS = 10;
const RELAYED_EVENTS = 100;
const WARM_UP_SECONDS = 2;
/** The measured seconds of each side, in this many turns. */
const SLICES = 5;

export interface Side {
  requestsPerSecond: number;
  p99Ms: number;
  errors: number;
  /** CPU time of the serving process per request: what a saturated server's throughput comes down to. */
  cpuPerRequestUs: number | undefined;
  /** The API's only: CPU time of the host running its other triggers (the relay, the queues) per request, meanwhile. */
  backgroundCpuPerRequestUs?: number | undefined;
}

export interface Throughput {
  endpoint: string;
  api: Side;
  floor: Side;
  /** The floor's work served as a function by a local host of its own. */
  floorFunction: Side;
  /** API requests per second over the floor's: the goal is at least 0.8. */
  throughputRatio: number;
  /** API p99 over the floor's: the goal is at most 1.5. */
  p99Ratio: number;
  /** The floor's work as a function over the bare floor: what the Functions layer leaves. */
  functionsLayerRatio: number;
  /** The API over the floor's work as a function: what the app's own code leaves. */
  appCodeRatio: number;
  /** The floor's work as a function's CPU per request over the API's: the API's CPU efficiency against it. */
  appCpuRatio: number | undefined;
}

export interface Memory {
  requests: number;
  rssMiB: { before: number; afterHalf: number; afterAll: number };
}

export interface OperationCost {
  operation: string;
  databaseRequests: number;
  requestCharge: number;
  /** The relay's reads of the change feed, for its rows. */
  changeFeedReads?: number;
}

export interface Target {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  /** Runs before the target is measured (a subscription made), and its result after (the subscription removed). */
  around?: () => Promise<() => Promise<unknown>>;
}

/** A server under load: where to send requests, the Authorization header they carry, and the process that answers them. */
export interface Server {
  baseUrl: string;
  authorization: string;
  pid: number;
  /** The process doing the work the requests hand to the background, whose CPU is counted apart. */
  backgroundPid?: number;
}

interface Slice {
  requests: number;
  p99Ms: number;
  errors: number;
  cpuMs: number | undefined;
  backgroundCpuMs: number | undefined;
}

/** The CPU time a process has used so far (all its threads), or undefined where there is no /proc. */
async function processCpuMs(pid: number): Promise<number | undefined> {
  try {
    // Fields 14 and 15 after the parenthesised name: user and system time, in Linux's fixed 100 ticks per second.
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

async function load(server: Server, target: Target, options: { duration?: number; amount?: number }): Promise<Slice> {
  const cpuBefore = await processCpuMs(server.pid);
  const backgroundBefore = server.backgroundPid === undefined ? undefined : await processCpuMs(server.backgroundPid);
  const result = await autocannon({
    url: `${server.baseUrl}${target.path}`,
    method: target.method,
    connections: CONCURRENT_REQUESTS,
    headers: { authorization: server.authorization, 'content-type': 'application/json' },
    ...(target.body ? { body: target.body } : {}),
    ...options,
  });
  const cpuAfter = await processCpuMs(server.pid);
  const backgroundAfter = server.backgroundPid === undefined ? undefined : await processCpuMs(server.backgroundPid);
  const cpuMs = cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore;
  const backgroundCpuMs = backgroundBefore === undefined || backgroundAfter === undefined ? undefined : backgroundAfter - backgroundBefore;
  return { requests: result.requests.total, p99Ms: result.latency.p99, errors: result.errors + result.timeouts + result.non2xx, cpuMs, backgroundCpuMs };
}

const ratio = (of: number, to: number): number => Math.round((of / to) * 100) / 100;

function summary(slices: Slice[]): Side {
  const requests = slices.reduce((sum, slice) => sum + slice.requests, 0);
  const perRequestUs = (of: 'cpuMs' | 'backgroundCpuMs') =>
    slices.every((slice) => slice[of] !== undefined) && requests > 0
      ? Math.round((slices.reduce((sum, slice) => sum + slice[of]!, 0) * 1000) / requests)
      : undefined;
  return {
    requestsPerSecond: Math.round(requests / DURATION_SECONDS),
    p99Ms: median(slices.map((slice) => slice.p99Ms)),
    errors: slices.reduce((sum, slice) => sum + slice.errors, 0),
    cpuPerRequestUs: perRequestUs('cpuMs'),
    ...(slices.some((slice) => slice.backgroundCpuMs !== undefined) ? { backgroundCpuPerRequestUs: perRequestUs('backgroundCpuMs') } : {}),
  };
}

/**
 * Each server for DURATION_SECONDS after a warm-up, taking turns in slices: on a shared machine
 * whose speed drifts (seen here: the floor alone from 1,000 to 2,100 req/s within minutes), a ratio
 * of two runs made one after the other measures the drift as much as the API.
 */
export async function measureInTurns(servers: Server[], target: Target): Promise<Side[]> {
  for (const server of servers) await load(server, target, { duration: WARM_UP_SECONDS });
  const slices = servers.map((): Slice[] => []);
  for (let slice = 0; slice < SLICES; slice++) {
    for (const [index, server] of servers.entries()) slices[index]!.push(await load(server, target, { duration: DURATION_SECONDS / SLICES }));
  }
  return slices.map(summary);
}

/** Where the embedded parts are: the settings the floor's work reads. */
function embeddedPartSettings(stack: LocalStack): Record<string, string> {
  return {
    AUTH_TENANT_ID: LOCAL_HOME_TENANT_ID,
    AUTH_CLIENT_ID: LOCAL_CLIENT_ID,
    AUTH_AUTHORITY_HOST: stack.identityProvider!.authorityHost,
    COSMOS_CONNECTION: stack.cosmos!.connectionString,
    COSMOS_DATABASE: 'lms',
  };
}

/** The settings the app and the floor run with: the embedded parts', and trust in their certificate. */
function embeddedSettings(stack: LocalStack): NodeJS.ProcessEnv {
  return { ...process.env, NODE_EXTRA_CA_CERTS: stack.caCertPath, ...embeddedPartSettings(stack) };
}

async function startFloor(stack: LocalStack, authorization: string): Promise<Server & { stop(): Promise<void> }> {
  const child = fork(new URL('./floor-server.js', import.meta.url), [], { env: embeddedSettings(stack) });
  const { port } = await new Promise<{ port: number }>((resolve) => child.once('message', (message) => resolve(message as { port: number })));
  return { baseUrl: `http://127.0.0.1:${port}/api`, authorization, pid: child.pid!, stop: () => Promise.resolve(void child.kill()) };
}

/** A second local host, serving a function app whose one file is bench/floor-function.ts. */
async function startFloorFunction(stack: LocalStack, authorization: string): Promise<Server & { stop(): Promise<void> }> {
  const functionApp = await mkdtemp(join(tmpdir(), 'lms-bench-floor-app-'));
  await writeFile(join(functionApp, 'package.json'), JSON.stringify({ type: 'module', main: fileURLToPath(new URL('./floor-function.js', import.meta.url)) }));
  await writeFile(join(functionApp, 'host.json'), JSON.stringify({ version: '2.0' }));
  const host = await startHostProcess({
    port: 0,
    environment: embeddedPartSettings(stack),
    extraCaCerts: stack.caCertPath,
    appRoot: functionApp,
  }).catch(async (error: unknown) => {
    await rm(functionApp, { recursive: true, force: true });
    throw error;
  });
  return {
    baseUrl: `http://127.0.0.1:${host.port}/api`,
    authorization,
    pid: host.pid,
    async stop() {
      await host.stop();
      await rm(functionApp, { recursive: true, force: true });
    },
  };
}

/** bench/in-process.ts in a process of its own, with the app's settings (and its functions registered with the local host's stand-in for the runtime). */
function runInProcess(stack: LocalStack, projectId: string, authorization: string, profile?: { dir: string; variant: string }): Promise<InProcessCosts> {
  const child = fork(new URL('./in-process.js', import.meta.url), [], {
    // The app's own settings, as its host has them, trusting the local certificate.
    env: {
      ...stack.environment,
      ...embeddedSettings(stack),
      NODE_PATH: join(appRoot(), 'local', 'host', 'functions-core'),
      BENCH_API: stack.apiBaseUrl,
      BENCH_PROJECT_ID: projectId,
      BENCH_AUTHORIZATION: authorization,
      ...(profile ? { BENCH_VARIANT: profile.variant } : {}),
    },
    execArgv: profile ? ['--cpu-prof', `--cpu-prof-dir=${profile.dir}`, `--cpu-prof-name=${profile.variant}.cpuprofile`] : [],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message as InProcessCosts));
    child.once('exit', (code) => reject(new Error(`bench/in-process exited (code ${code}) without its figures`)));
  });
}

/** The in-process figures; with `cpuProfDir`, each variant measured alone, its CPU profile written there as `<variant>.cpuprofile`. */
async function measureInProcess(stack: LocalStack, projectId: string, authorization: string, cpuProfDir?: string): Promise<InProcessCosts> {
  if (!cpuProfDir) return runInProcess(stack, projectId, authorization);
  const alone: InProcessCosts[] = [];
  for (const variant of inProcessVariants(benchedOperations(projectId))) {
    alone.push(await runInProcess(stack, projectId, authorization, { dir: cpuProfDir, variant }));
  }
  // Each run measured one variant: the others are null there.
  const measured = (pick: (costs: InProcessCosts) => number | null) => alone.map(pick).find((value) => value !== null) ?? null;
  return {
    hostObjectsUs: measured((costs) => costs.hostObjectsUs),
    operations: alone[0]!.operations.map((operation, index) => ({
      ...operation,
      functionUs: measured((costs) => costs.operations[index]!.functionUs),
      floorUs: measured((costs) => costs.operations[index]!.floorUs),
    })),
  };
}

/** The data every list reads: a project with 60 tasks, and 60 projects more. Answers the project's id. */
async function seed(apiBaseUrl: string, authorization: string): Promise<string> {
  const create = (path: string, body: unknown) =>
    fetch(`${apiBaseUrl}${path}`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
      async (response) => {
        if (response.status !== 201) throw new Error(`POST ${path} answered ${response.status}: ${await response.text()}`);
        return (await response.json()) as { id: string };
      },
    );
  const { id } = await create('/projects', { name: 'Benchmark course', description: 'Measured.' });
  for (let index = 0; index < 60; index++) await create('/projects', { name: `Course ${index}` });
  for (let index = 0; index < 60; index++) await create('/tasks', { projectId: id, title: `Lesson ${index}` });
  return id;
}

/** The in-process figures alone, on a stack of their own with the lists' data. */
export async function benchInProcess(cpuProfDir?: string): Promise<InProcessCosts> {
  const settings = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AUTH_|COSMOS_|GRAPH_|EMBEDDINGS_|RAG_|AzureWebJobs)/.test(name)));
  const stack = await startStack({ apiPort: 0, identityProviderPort: 0, settings });
  try {
    const authorization = `Bearer ${await stack.identityProvider!.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', roles: ['LMS.Admin'] })}`;
    return await measureInProcess(stack, await seed(stack.apiBaseUrl, authorization), authorization, cpuProfDir);
  } finally {
    await stack.stop();
  }
}

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]);
  return Math.round(kib / 1024);
}

/** Resolves once the database has had no request for a second. */
async function databaseQuiet(counts: { requests: number }): Promise<void> {
  for (let last = -1; counts.requests !== last;) {
    last = counts.requests;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/**
 * The functions that are not HTTP-triggered. Flex Consumption scales each of them apart from the HTTP
 * functions, on instances of their own: the API's host runs none of them here either (checked at the
 * start), and a second host of the app runs them.
 */
const BACKGROUND_FUNCTIONS = ['changes-relay', 'rag-index-poison', 'rag-index-worker', 'webhooks-deliver', 'webhooks-sweep'];
const switchedOff = (off: boolean) => Object.fromEntries(BACKGROUND_FUNCTIONS.map((name) => [`AzureWebJobs.${name}.Disabled`, String(off)]));

/** The stack, its host serving HTTP only, and a second host of the same app running every other trigger. */
async function startApartFromBackground(settings: Record<string, string | undefined>) {
  const stack = await startStack({ apiPort: 0, identityProviderPort: 0, settings: { ...settings, ...switchedOff(true) } });
  try {
    const running = [...stack.queueFunctions, ...stack.timerFunctions, ...stack.cosmosFunctions].map(({ name }) => name);
    if (running.length) throw new Error(`The API's host runs ${running.join(', ')}: add them to BACKGROUND_FUNCTIONS in bench/api-throughput.ts`);
    const background = await startHostProcess({ port: 0, environment: { ...stack.environment, ...switchedOff(false) }, extraCaCerts: stack.caCertPath });
    const stop = async () => {
      await background.stop();
      await stack.stop();
    };
    return { stack, background, stop };
  } catch (error) {
    await stack.stop();
    throw error;
  }
}

/** The API against the floor over HTTP; then, on a stack of its own (the creates above grew the data the lists read), in one process. */
export async function benchApi(): Promise<{ throughput: Throughput[]; inProcess: InProcessCosts; memory: Memory; costs: OperationCost[] }> {
  const overHttp = await benchApiOverHttp();
  return { ...overHttp, inProcess: await benchInProcess() };
}

async function benchApiOverHttp(): Promise<{ throughput: Throughput[]; memory: Memory; costs: OperationCost[] }> {
  const settings = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AUTH_|COSMOS_|GRAPH_|EMBEDDINGS_|RAG_|AzureWebJobs)/.test(name)));
  const { stack, background, stop } = await startApartFromBackground(settings);
  const servers: { stop(): Promise<void> }[] = [];
  try {
    const token = await stack.identityProvider!.issueToken({ tenantId: LOCAL_HOME_TENANT_ID, kind: 'user', roles: ['LMS.Admin'] });
    const authorization = `Bearer ${token}`;
    const host: Server = { baseUrl: stack.apiBaseUrl, authorization, pid: stack.hostPid, backgroundPid: background.pid };
    const floor = await startFloor(stack, authorization);
    servers.push(floor);
    const floorFunction = await startFloorFunction(stack, authorization);
    servers.push(floorFunction);
    const receivers: WebhookReceiver[] = [];
    /** Subscribes a receiver to project.created; answers how to unsubscribe. */
    const subscribe = async () => {
      const receiver = await startWebhookReceiver();
      receivers.push(receiver);
      const { body } = (await api('POST', '/webhooks', { url: receiver.url, events: ['project.created'] })) as { body: { id: string } };
      return () => api('DELETE', `/webhooks/${body.id}`);
    };
    servers.push({ stop: () => Promise.all(receivers.map((receiver) => receiver.close())).then(() => undefined) });
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${stack.apiBaseUrl}${path}`, {
        method,
        headers: { authorization, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      }).then(async (response) => ({ status: response.status, body: await response.json().catch(() => null) }));

    const project = { id: await seed(stack.apiBaseUrl, authorization) };

    const cosmos = stack.cosmos!;
    /** What `run` costs the database, on average over `times` runs (a create: a block of ids, one of which reserves the next block). */
    const cost = async (operation: string, run: () => Promise<unknown>, times = 1): Promise<OperationCost> => {
      const spent = { requests: 0, requestCharge: 0 };
      for (let index = 0; index < times; index++) {
        // The events of the creates before are still being handed over: their requests are not this operation's.
        await databaseQuiet(cosmos.counts);
        const before = { ...cosmos.counts };
        await run();
        spent.requests += cosmos.counts.requests - before.requests;
        spent.requestCharge += cosmos.counts.requestCharge - before.requestCharge;
      }
      return { operation, databaseRequests: ratio(spent.requests, times), requestCharge: ratio(spent.requestCharge, times) };
    };
    /**
     * What the change feed relay costs the database for each event it hands over, beside the create's
     * own request: a hundred creates, counted until the database is quiet again (the relay's reads of
     * the feed, idle polls included, and its leases are counted apart).
     */
    const relayCost = async (operation: string): Promise<OperationCost> => {
      await databaseQuiet(cosmos.counts);
      const before = { ...cosmos.counts };
      for (let index = 0; index < RELAYED_EVENTS; index++) await api('POST', '/projects', { name: `Relayed ${index}` });
      await databaseQuiet(cosmos.counts);
      const per = (name: 'requests' | 'requestCharge' | 'changeFeedReads') => Math.round(((cosmos.counts[name] - before[name]) / RELAYED_EVENTS) * 100) / 100;
      return {
        operation,
        databaseRequests: Math.round((per('requests') - 1) * 100) / 100,
        requestCharge: Math.round((per('requestCharge') - 1) * 100) / 100,
        changeFeedReads: per('changeFeedReads'),
      };
    };
    const costs = [
      await cost('GET /projects/{id}', () => api('GET', `/projects/${project.id}`)),
      await cost('GET /projects?limit=50', () => api('GET', '/projects?limit=50')),
      await cost(`POST /projects (its event in the same batch), over ${BLOCK_SIZE}`, () => api('POST', '/projects', { name: 'Costed' }), BLOCK_SIZE),
      await cost('PUT /projects/{id}', () => api('PUT', `/projects/${project.id}`, { description: 'Costed.' })),
      await cost('GET /tasks?projectId=…', () => api('GET', `/tasks?projectId=${project.id}`)),
      await cost(`POST /tasks, over ${BLOCK_SIZE}`, () => api('POST', '/tasks', { projectId: project.id, title: 'Costed' }), BLOCK_SIZE),
      await relayCost('the relay, per event, no subscription'),
    ];
    const unsubscribe = await subscribe();
    costs.push(await relayCost('the relay, per event, one subscription (its delivery and attempt)'));
    await unsubscribe();

    const operations = benchedOperations(project.id);
    const create = operations.find(({ method }) => method === 'POST')!;
    const targets: Target[] = [...operations, { ...create, name: `${create.name}, one subscription`, around: subscribe }];
    const throughput: Throughput[] = [];
    for (const target of targets) {
      const after = await target.around?.();
      const [apiResult, floorFunctionResult, floorResult] = (await measureInTurns([host, floorFunction, floor], target)) as [Side, Side, Side];
      await after?.();
      throughput.push({
        endpoint: target.name,
        api: apiResult,
        floor: floorResult,
        floorFunction: floorFunctionResult,
        throughputRatio: ratio(apiResult.requestsPerSecond, floorResult.requestsPerSecond),
        p99Ratio: ratio(apiResult.p99Ms, Math.max(floorResult.p99Ms, 1)),
        functionsLayerRatio: ratio(floorFunctionResult.requestsPerSecond, floorResult.requestsPerSecond),
        appCodeRatio: ratio(apiResult.requestsPerSecond, floorFunctionResult.requestsPerSecond),
        appCpuRatio:
          apiResult.cpuPerRequestUs && floorFunctionResult.cpuPerRequestUs ? ratio(floorFunctionResult.cpuPerRequestUs, apiResult.cpuPerRequestUs) : undefined,
      });
    }

    const read: Target = targets[0]!;
    const before = await rssMiB(host.pid);
    await load(host, read, { amount: 50_000 });
    const afterHalf = await rssMiB(host.pid);
    await load(host, read, { amount: 50_000 });
    const afterAll = await rssMiB(host.pid);
    return { throughput, memory: { requests: 100_000, rssMiB: { before, afterHalf, afterAll } }, costs };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await stop();
  }
}
