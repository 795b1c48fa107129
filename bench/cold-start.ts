/**
 * Cold start: how long a fresh Node process takes to import the whole function app (every file of
 * package.json's `main`, as the Functions worker does), for the esbuild bundle and for the plain
 * tsc output. The median of 10 fresh processes each.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { appFiles } from '../local/host/registrations.js';
import { appRoot } from '../local/stack.js';
import { median } from './figures.js';

const RUNS = 10;

// Imports every file and prints the milliseconds it took, measured inside the fresh process.
const IMPORT_ALL = `const started = performance.now();
for (const file of JSON.parse(process.argv[1])) await import(file);
console.log(performance.now() - started);`;

function importTimes(files: string[]): number[] {
  const root = appRoot();
  return Array.from({ length: RUNS }, () =>
    Number(
      execFileSync(process.execPath, ['--input-type=module', '-e', IMPORT_ALL, JSON.stringify(files.map((file) => `file://${file}`))], {
        env: { ...process.env, NODE_PATH: join(root, 'local', 'host', 'functions-core') },
        encoding: 'utf8',
      }).trim(),
    ),
  );
}

export async function benchColdStart(): Promise<{ bundleMs: number; plainMs: number; ratio: number }> {
  const root = appRoot();
  const bundle = await appFiles(root);
  const plain = bundle.map((file) => join(root, 'dist', 'functions', file.slice(file.lastIndexOf('/') + 1)));
  const bundleMs = Math.round(median(importTimes(bundle)) * 10) / 10;
  const plainMs = Math.round(median(importTimes(plain)) * 10) / 10;
  return { bundleMs, plainMs, ratio: Math.round((bundleMs / plainMs) * 100) / 100 };
}
