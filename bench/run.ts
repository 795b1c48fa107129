import { parseArgs } from 'node:util';
import { benchApi } from './api-throughput.js';
import { benchColdStart } from './cold-start.js';
import { benchJournalCost } from './journal-cost.js';
import { benchRagRebuild } from './rag-rebuild.js';

const tlsDir = process.env.BENCH_TLS_DIR;
if (!tlsDir) throw new Error('Run the benchmarks with `npm run bench`');
// A quick look with less data: npm run bench -- --projects 1000 --tasks 5000
const { values } = parseArgs({
  options: { json: { type: 'boolean', default: false }, projects: { type: 'string', default: '10000' }, tasks: { type: 'string', default: '50000' } },
});

const coldStart = await benchColdStart();
const api = await benchApi();
const journalCost = await benchJournalCost();
const ragRebuild = await benchRagRebuild(tlsDir, { projects: Number(values.projects), tasks: Number(values.tasks) });

if (values.json) {
  console.log(
    JSON.stringify({ throughput: api.throughput, inProcess: api.inProcess, memory: api.memory, costs: api.costs, journalCost, coldStart, ragRebuild }, null, 2),
  );
} else {
  /** One table row per benchmarked request. */
  const perRequest = (columns: (row: (typeof api.throughput)[number]) => Record<string, unknown>) =>
    Object.fromEntries(api.throughput.map((row) => [row.endpoint, columns(row)]));
  console.log(
    '\nThroughput and latency through the local host on the embedded store, against the floor (autocannon, 32 ' +
      "connections, 2 s of warm-up, then 10 s each in five 2 s turns taken in rotation with the floor's work as a " +
      'function, below; p99 is the median of the turns; CPU per request is that of the serving process)',
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
      "API / it (the app's code)": row.appCodeRatio,
      'its errors': row.floorFunction.errors,
    })),
  );
  console.log("\nWhere a read's time goes, without HTTP: CPU per call in one process, 32 calls at a time (µs, median of 3 runs of 6,000)");
  console.table({
    "the host's request and answer objects, around a fixed result": api.inProcess.hostObjectsUs,
    'the projects-get function with those objects': api.inProcess.functionUs,
    "the floor's work (token, one read, JSON)": api.inProcess.floorWorkUs,
  });
  console.log(`\nMemory of the local host over ${api.memory.requests.toLocaleString('en')} requests (RSS, MiB)`);
  console.table({ before: api.memory.rssMiB.before, 'after 50,000': api.memory.rssMiB.afterHalf, 'after 100,000': api.memory.rssMiB.afterAll });
  console.log('\nDatabase cost per operation, warm (the embedded store reports 1 RU per request; Azure reports the real charge)');
  console.table(
    Object.fromEntries(api.costs.map((cost) => [cost.operation, { 'database requests': cost.databaseRequests, 'request charge (RU)': cost.requestCharge }])),
  );
  console.log(
    "\nWhat the embedded database's journal costs a create: POST /api/projects on a stack with a data folder (each write " +
      'fsynced to the journal before its answer) and on one without (in memory), in alternating turns as above',
  );
  console.table({
    'in memory': { 'req/s': journalCost.inMemory.requestsPerSecond, 'p99 ms': journalCost.inMemory.p99Ms, errors: journalCost.inMemory.errors },
    'durable journal': { 'req/s': journalCost.durable.requestsPerSecond, 'p99 ms': journalCost.durable.p99Ms, errors: journalCost.durable.errors },
  });
  console.log(
    `Durable over in memory: req/s ${journalCost.throughputRatio}, p99 ${journalCost.p99Ratio}; ` +
      `${journalCost.writesPerSync} journaled write requests per fsync (group commit)`,
  );
  console.log('\nCold start: importing the whole function app in a fresh process (median of 10)');
  console.table({ 'esbuild bundle (ms)': coldStart.bundleMs, 'plain tsc output (ms)': coldStart.plainMs, 'ratio (≤ 0.5)': coldStart.ratio });
  console.log(`\nRAG rebuild, ${ragRebuild.projects.toLocaleString('en')} projects + ${ragRebuild.tasks.toLocaleString('en')} tasks on the embedded store`);
  console.table({
    'full rebuild': {
      seconds: ragRebuild.full.seconds,
      'sources/s': ragRebuild.full.sourcesPerSecond,
      'chunks written': ragRebuild.full.written,
      'chunks in index': ragRebuild.full.chunks,
    },
    'incremental, nothing changed': {
      seconds: ragRebuild.incremental.seconds,
      'sources/s': '',
      'chunks written': ragRebuild.incremental.written,
      'chunks in index': ragRebuild.full.chunks,
    },
  });
}
