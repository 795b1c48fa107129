import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * openapi.json at the app root, the folder holding host.json: `npm run openapi` writes it there, the
 * deployment carries it there, and the function serving `/api/openapi.json` reads it from there.
 * Found by walking up from this module, since the tsc output and the bundle put it at other depths.
 */
export function documentFile(): string {
  let folder = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(folder, 'host.json'))) {
    const parent = dirname(folder);
    if (parent === folder) throw new Error('Cannot find the app root (no host.json above this module)');
    folder = parent;
  }
  return join(folder, 'openapi.json');
}
