/**
 * What dist/ was built from. `npm run build` (tools/build.mjs) records a fingerprint of every file the build
 * reads (the sources, their configuration, the installed packages' lock) taken before it started, and a stamp of
 * what it wrote; `npm start` builds only when either differs now. The record goes before a build begins and comes
 * back only when it succeeded, and any other writer of dist/ (`npm run compile`, a hand) changes the stamp: a stale
 * dist/ is worse than a slow start.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const RECORD = join('dist', '.built-from.json');
// Every file in these folders (but their node_modules and dist), and these files, is read by the build or decides what it writes.
const SOURCE_FOLDERS = ['functions', 'shared', 'local', 'bench', 'tools', 'client', 'patches'];
const SOURCE_FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'host.json', 'openapi.json', join('node_modules', '.package-lock.json')];
const OUTPUT_FOLDERS = ['dist', join('client', 'dist')];
// Written by other commands than the build: the compiled Bicep and its snapshots (`npm run infra`), azd's package (`npm run package`).
const NOT_OUTPUTS = new Set([join('dist', 'infra'), join('dist', 'package')]);
// Never read by the build: packages (the lock stands for them), outputs, and the Bicep CLI's restore.
const NOT_SOURCES = new Set(['node_modules', 'dist', join('tools', 'bicep', 'obj'), join('tools', 'bicep', 'bin')]);

interface Record {
  sources: string;
  outputs: string;
}

/** The files under `folder`, relative to `root`, sorted, but those under a folder `skip` names or whose path it holds; none when it does not exist. */
async function filesUnder(root: string, folder: string, skip = new Set<string>()): Promise<string[]> {
  const entries = await readdir(join(root, folder), { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  const files = await Promise.all(
    entries.map(async (entry) => {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) return skip.has(entry.name) || skip.has(path) ? [] : filesUnder(root, path, skip);
      return entry.isFile() ? [path] : [];
    }),
  );
  return files.flat().sort();
}

/** One hash of the build's inputs: each file's path and content. */
export async function sourcesFingerprint(root: string): Promise<string> {
  const files = [...SOURCE_FILES, ...(await Promise.all(SOURCE_FOLDERS.map((folder) => filesUnder(root, folder, NOT_SOURCES)))).flat()];
  const hash = createHash('sha256');
  for (const file of files) {
    const content = await readFile(join(root, file)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    hash.update(`${file}\0${content === undefined ? '-' : createHash('sha256').update(content).digest('hex')}\0`);
  }
  return hash.digest('hex');
}

/** One hash of what the build wrote: each output file's path, size and modification time (the record aside). */
async function outputsStamp(root: string): Promise<string> {
  const files = (await Promise.all(OUTPUT_FOLDERS.map((folder) => filesUnder(root, folder, NOT_OUTPUTS)))).flat().filter((file) => file !== RECORD);
  const hash = createHash('sha256');
  for (const file of files) {
    const { size, mtimeMs } = await stat(join(root, file));
    hash.update(`${file}\0${size}\0${mtimeMs}\0`);
  }
  return hash.digest('hex');
}

/** Before a build: dist/ is about to change, so nothing may say what it was built from. */
export async function forgetBuild(root: string): Promise<void> {
  await rm(join(root, RECORD), { force: true });
}

/** After a build that succeeded: it was built from `sources`, the fingerprint taken before it began. */
export async function recordBuild(root: string, sources: string): Promise<void> {
  const record: Record = { sources, outputs: await outputsStamp(root) };
  await writeFile(join(root, RECORD), `${JSON.stringify(record)}\n`);
}

/** True when dist/ is what a build of the files there are now made, and nothing has written to it since. */
export async function distIsCurrent(root: string): Promise<boolean> {
  const text = await readFile(join(root, RECORD), 'utf8').catch(() => undefined);
  if (text === undefined) return false;
  const record = JSON.parse(text) as Record;
  return record.outputs === (await outputsStamp(root)) && record.sources === (await sourcesFingerprint(root));
}
