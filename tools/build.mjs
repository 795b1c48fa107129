// `npm run build`: compiles and bundles (`npm run compile`), checks that the generated files are current, and records
// what dist/ was built from (tools/built-from.ts) once all of that succeeded, so that `npm start` can skip a build
// that would change nothing.
import { spawnSync } from 'node:child_process';
import { importSources, root } from './load-source.mjs';

const [{ forgetBuild, recordBuild, sourcesFingerprint }] = await importSources('tools/built-from.ts');
// Taken before the build: a file changed while it runs makes the next start build again.
const sources = await sourcesFingerprint(root);
await forgetBuild(root);
for (const [command, ...args] of [
  ['npm', 'run', '-s', 'compile'],
  [process.execPath, 'dist/tools/write-openapi.js', '--check'],
]) {
  const { status } = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (status !== 0) process.exit(status ?? 1);
}
await recordBuild(root, sources);
