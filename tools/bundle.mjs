// The function app as Azure and `func start` run it: one ESM bundle per function file (package.json's
// `main` points at them), with shared code in common chunks and the modules only some functions
// need (msal-node, the storage queue client, the identity library) in chunks of their own, loaded
// on first use. `@azure/functions-core` stays external: the Functions host supplies it. Into dist/app,
// or the folder given (`npm run package` bundles afresh into the deployment package).
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';
import { fileURLToPath, URL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const functionFiles = readdirSync(`${root}functions`)
  .filter((file) => file.endsWith('.ts'))
  .map((file) => `${root}functions/${file}`);

await build({
  entryPoints: functionFiles,
  outdir: process.argv[2] ?? `${root}dist/app`,
  outbase: root,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  minify: true,
  sourcemap: true,
  legalComments: 'linked',
  external: ['@azure/functions-core'],
  // Bundled CommonJS packages call require(); ESM output needs one to give them.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
});
