import { parseArgs } from 'node:util';
import { benchRagRebuild } from './rag-rebuild.js';

const tlsDir = process.env.BENCH_TLS_DIR;
if (!tlsDir) throw new Error('Run the benchmarks with `npm run bench`');
// Smaller data sets for a quick look: npm run bench -- --projects 1000 --tasks 5000
const { values } = parseArgs({ options: { json: { type: 'boolean', default: false }, projects: { type: 'string', default: '10000' }, tasks: { type: 'string', default: '50000' } } });
const asJson = values.json;
const rag = await benchRagRebuild(tlsDir, { projects: Number(values.projects), tasks: Number(values.tasks) });

if (asJson) {
  console.log(JSON.stringify({ ragRebuild: rag }, null, 2));
} else {
  console.log(`RAG rebuild, ${rag.projects.toLocaleString('en')} projects + ${rag.tasks.toLocaleString('en')} tasks on the embedded store`);
  console.table({
    'full rebuild': { seconds: rag.full.seconds, 'sources/s': rag.full.sourcesPerSecond, 'chunks written': rag.full.written, 'chunks in index': rag.full.chunks },
    'incremental, nothing changed': { seconds: rag.incremental.seconds, 'sources/s': '', 'chunks written': rag.incremental.written, 'chunks in index': rag.full.chunks },
  });
}
