import { parseArgs } from 'node:util';
import { benchApi, benchInProcess } from './api-throughput.js';
import { benchColdStart } from './cold-start.js';
import { benchDiskCost } from './disk-cost.js';
import { benchRagRebuild } from './rag-rebuild.js';
import { benchWebhooks } from './webhooks.js';

const tlsDir = process.env.BENCH_TLS_DIR;
if (!tlsDir) throw new Error('Run the benchmarks with `npm run bench`');
// A quick look with less data: npm run bench -- --small 2000 --large 20000
const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    small: { type: 'string', default: '20000' },
    large: { type: 'string', default: '200000' },
    // One part only: cold-start, api, in-process, disk, webhooks or rag (default: all but in-process, which api includes).
    only: { type: 'string' },
    // With --only in-process: each in-process variant alone under --cpu-prof, its profile written to this folder.
    'cpu-prof': { type: 'string' },
  },
});

type Api = Awaited<ReturnType<typeof benchApi>>;
type InProcess = Awaited<ReturnType<typeof benchInProcess>>;
type ColdStart = Awaited<ReturnType<typeof benchColdStart>>;
type DiskCost = Awaited<ReturnType<typeof benchDiskCost>>;
type RagRebuild = Awaited<ReturnType<typeof benchRagRebuild>>;
type Webhooks = Awaited<ReturnType<typeof benchWebhooks>>;

function printApi(api: Api): void {
  /** One table row per benchmarked request. */
  const perRequest = (columns: (row: (typeof api.throughput)[number]) => Record<string, unknown>) =>
    Object.fromEntries(api.throughput.map((row) => [row.endpoint, columns(row)]));
  console.log(
    '\nThroughput and latency through the local host on the embedded store, against the floor (autocannon, 32 ' +
      "connections, 2 s of warm-up, then 10 s each in five 2 s turns taken in rotation with the floor's work as a " +
      'function, below; p99 is the median of the turns; CPU per request is that of the serving process, which serves HTTP ' +
      "only, as Flex Consumption scales HTTP functions apart from the others: its background CPU is the second host's, " +
      'running the change feed relay and the queues, meanwhile)',
  );
  console.table(
    perRequest((row) => ({
      'API req/s': row.api.requestsPerSecond,
      'floor req/s': row.floor.requestsPerSecond,
      'req/s ratio (≥ 0.8)': row.throughputRatio,
      'API p99 ms': row.api.p99Ms,
      'floor p99 ms': row.floor.p99Ms,
      'p99 ratio (≤ 1.5)': row.p99Ratio,
      'API CPU µs/req': row.api.cpuPerRequestUs ?? '–',
      'its background CPU µs/req': row.api.backgroundCpuPerRequestUs ?? '–',
      'floor CPU µs/req': row.floor.cpuPerRequestUs ?? '–',
      'API errors': row.api.errors,
    })),
  );
  console.log(
    "\nThe same gap split in two: the floor's work served as a function by a local host of its own (the Functions " +
      "layer: routing, the objects Azure's worker builds for each invocation, the answer), in the same turns",
  );
  console.table(
    perRequest((row) => ({
      "floor's work as a function req/s": row.floorFunction.requestsPerSecond,
      'its CPU µs/req': row.floorFunction.cpuPerRequestUs ?? '–',
      'it / floor (the layer)': row.functionsLayerRatio,
      'API / it, req/s (≥ 0.9)': row.appCodeRatio,
      'it / API, CPU per request (≥ 0.9)': row.appCpuRatio ?? '–',
      'its errors': row.floorFunction.errors,
    })),
  );
  printInProcess(api.inProcess);
  console.log(`\nMemory of the local host over ${api.memory.requests.toLocaleString('en')} requests (RSS, MiB)`);
  console.table({ before: api.memory.rssMiB.before, 'after 50,000': api.memory.rssMiB.afterHalf, 'after 100,000': api.memory.rssMiB.afterAll });
  console.log('\nDatabase cost per operation, warm (the embedded store reports 1 RU per request; Azure reports the real charge)');
  console.table(
    Object.fromEntries(
      api.costs.map((cost) => [
        cost.operation,
        { 'database requests': cost.databaseRequests, 'request charge (RU)': cost.requestCharge, 'change feed reads': cost.changeFeedReads ?? '–' },
      ]),
    ),
  );
}

function printInProcess(inProcess: InProcess): void {
  console.log("\nWhere an operation's time goes, without HTTP: CPU per call in one process, 32 calls at a time (µs, median of 3 runs of 6,000)");
  console.log(`The host's request and answer objects, around a fixed result: ${inProcess.hostObjectsUs} µs`);
  console.table(
    Object.fromEntries(
      inProcess.operations.map(({ request, functionName, functionUs, floorUs }) => [
        request,
        { [`the app's function (µs)`]: functionUs, "the floor's work (µs)": floorUs, function: functionName },
      ]),
    ),
  );
}

function printDiskCost(diskCost: DiskCost): void {
  console.log(
    '\nWhat keeping the embedded database on disk costs a create: POST /api/projects on a stack with a data folder (each ' +
      'write committed to LMDB and synced before its answer) and on one without (in memory), in alternating turns',
  );
  console.table({
    'in memory': { 'req/s': diskCost.inMemory.requestsPerSecond, 'p99 ms': diskCost.inMemory.p99Ms, errors: diskCost.inMemory.errors },
    'on disk': { 'req/s': diskCost.durable.requestsPerSecond, 'p99 ms': diskCost.durable.p99Ms, errors: diskCost.durable.errors },
  });
  console.log(`On disk over in memory: req/s ${diskCost.throughputRatio}, p99 ${diskCost.p99Ratio}`);
}

function printColdStart(coldStart: ColdStart): void {
  console.log('\nCold start: importing the whole function app in a fresh process (median of 10)');
  console.table({ 'esbuild bundle (ms)': coldStart.bundleMs, 'plain tsc output (ms)': coldStart.plainMs, 'ratio (≤ 0.5)': coldStart.ratio });
}

function printWebhooks(webhooks: Webhooks): void {
  console.log(`\nWebhooks on the local stack (load average ${webhooks.loadAverage.before} as the part began, ${webhooks.loadAverage.after} as it ended)`);
  console.log(`\nFrom a create's 201 to its receiver (${webhooks.latencyMs.events} events, one at a time, one subscription)`);
  console.table({ 'latency (ms)': { p50: webhooks.latencyMs.p50, p99: webhooks.latencyMs.p99 } });
  const { quiet, answering, hanging, p99MovedMs, p99MovedFromQuietMs } = webhooks.steady;
  console.log(
    "\nFrom a create's 201 to its receiver at 100 creates/s for 20 s over 10 tenants, each subscribed at a receiver that answers at once " +
      "(the ten tenants' events): alone; with an 11th tenant creating as much, whose receiver answers; and with an 11th whose receiver " +
      'takes the connection and never answers',
  );
  const row = (figures: typeof quiet) => ({
    'p50 ms': figures.p50,
    'p99 ms': figures.p99,
    'max ms': figures.max,
    events: figures.events,
    lost: figures.lost,
    'creates refused': figures.refused,
    'creates/s answered': figures.createsPerSecond,
  });
  console.table({
    '10 tenants': row(quiet),
    "10 tenants, an 11th's receiver answering": row(answering),
    "10 tenants, an 11th's receiver hanging": row(hanging),
  });
  console.log(`The hanging receiver moved the others' p99 by ${p99MovedMs} ms against the answering one, ${p99MovedFromQuietMs} ms against the ten alone`);
  const { burst } = webhooks;
  console.log(`\n${burst.events.toLocaleString('en')} creates at once, each event to ${burst.subscriptions} subscriptions`);
  console.table({ burst: { seconds: burst.seconds, 'deliveries/s': burst.deliveriesPerSecond, lost: burst.lost, duplicates: burst.duplicates } });
  console.log(
    "\nPOST /api/projects with and without a subscription, in alternating turns (every create's event rides in its one batch, " +
      'and the change feed relay hands it over either way)',
  );
  console.table({
    'POST /api/projects': {
      'req/s, no subscription': webhooks.create.withoutSubscription,
      'req/s, one subscription': webhooks.create.withSubscription,
      ratio: webhooks.create.ratio,
    },
  });
}

function printRagRebuild(ragRebuild: RagRebuild): void {
  console.log('\nRAG rebuild (full) through the API on seeded data: time from the request to Succeeded, and the peak memory of the instance');
  console.table(
    Object.fromEntries(
      ragRebuild.runs.map((run) => [
        `${run.sources.toLocaleString('en')} sources, ${run.instances} instance${run.instances > 1 ? 's' : ''}, embeddings ${run.embeddings}`,
        { seconds: run.seconds, 'sources/s': run.sourcesPerSecond, 'chunks written': run.written, 'peak RSS (MiB)': run.peakRssMiB },
      ]),
    ),
  );
  console.table({ 'two instances / one (sources/s)': ragRebuild.speedUp, 'peak RSS, large / small (≤ 1.2)': ragRebuild.peakRssRatio });
}

/** The parts of the bench, in the order they run; `--only` picks one. */
const parts = {
  'cold-start': async () => ({ coldStart: await benchColdStart() }),
  api: async () => ({ api: await benchApi() }),
  'in-process': async () => ({ inProcess: await benchInProcess(values['cpu-prof']) }),
  disk: async () => ({ diskCost: await benchDiskCost() }),
  webhooks: async () => ({ webhooks: await benchWebhooks() }),
  rag: async () => ({ ragRebuild: await benchRagRebuild({ small: Number(values.small), large: Number(values.large) }) }),
};
if (values.only !== undefined && !Object.hasOwn(parts, values.only)) throw new Error(`--only takes one of ${Object.keys(parts).join(', ')}`);
type Figures = { coldStart?: ColdStart; api?: Api; inProcess?: InProcess; diskCost?: DiskCost; webhooks?: Webhooks; ragRebuild?: RagRebuild };

/** A part's tables, printed as soon as it ends: a later part that fails loses none of them. */
function printPart(part: Figures): void {
  if (part.api) printApi(part.api);
  if (part.inProcess) printInProcess(part.inProcess);
  if (part.diskCost) printDiskCost(part.diskCost);
  if (part.coldStart) printColdStart(part.coldStart);
  if (part.webhooks) printWebhooks(part.webhooks);
  if (part.ragRebuild) printRagRebuild(part.ragRebuild);
}

const figures: Figures = {};
for (const [name, run] of Object.entries(parts)) {
  if (values.only === undefined ? name === 'in-process' : values.only !== name) continue;
  const part: Figures = await run();
  if (values.json) Object.assign(figures, part);
  else printPart(part);
}
if (values.json) {
  const { api, ...others } = figures;
  console.log(
    JSON.stringify({ ...(api ? { throughput: api.throughput, inProcess: api.inProcess, memory: api.memory, costs: api.costs } : {}), ...others }, null, 2),
  );
}
