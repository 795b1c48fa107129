// Imports a TypeScript module of this checkout before `npm run build` has compiled it: what `npm start` checks
// before it builds, and the build's own record of what it was built from. esbuild bundles the module with what it
// imports into a temporary file, which is imported and removed.
import { build } from 'esbuild';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL, URL } from 'node:url';

/** The checkout this file is in. */
export const root = fileURLToPath(new URL('..', import.meta.url));

/** The modules at `paths` (relative to the checkout), in their order. */
export async function importSources(...paths) {
  const folder = await mkdtemp(join(tmpdir(), 'lms-sources-'));
  try {
    await build({
      entryPoints: paths.map((path) => join(root, path)),
      outdir: folder,
      outbase: root,
      outExtension: { '.js': '.mjs' },
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      logLevel: 'warning',
    });
    return await Promise.all(paths.map((path) => import(pathToFileURL(join(folder, path.replace(/\.ts$/, '.mjs'))).href)));
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
