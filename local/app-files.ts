import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

/** The files of package.json's `main` (a path or a `dir/*.js` pattern), as the worker resolves them. */
export async function appFiles(appRoot: string): Promise<string[]> {
  const { main } = JSON.parse(await readFile(join(appRoot, 'package.json'), 'utf8')) as { main?: string };
  if (!main) throw new Error('package.json has no "main": the host would find no functions');
  const pattern = resolve(appRoot, main);
  const name = pattern.slice(dirname(pattern).length + 1);
  if (!name.includes('*')) return [pattern];
  if (dirname(pattern).includes('*')) throw new Error(`Only the file name of "main" may hold a wildcard: ${main}`);
  const matcher = new RegExp(`^${name.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
  const entries = await readdir(dirname(pattern));
  return entries
    .filter((entry) => matcher.test(entry))
    .sort()
    .map((entry) => join(dirname(pattern), entry));
}
