// `npm start` runs this first. It checks what a user may have set wrong (local/start/options.ts: local.settings.json,
// the ports and data folder another stack may hold, a database that does not answer) from the sources, so that a
// mistake is one message at once, before any build; then it builds, unless dist/ is what the sources build
// (tools/built-from.ts), so that a second start takes seconds. start.js checks again before it starts.
import { spawnSync } from 'node:child_process';
import { importSources, root } from './load-source.mjs';

const [{ startOptions, stopOnStartError }, { distIsCurrent }] = await importSources('local/start/options.ts', 'tools/built-from.ts');
await startOptions(root).catch(stopOnStartError);
if (await distIsCurrent(root)) {
  console.log('dist/ is built from these sources: no build.');
} else {
  const { status } = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  process.exitCode = status ?? 1;
}
