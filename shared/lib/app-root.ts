import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The function app's root, the folder holding host.json, found by walking up from the calling
 * module (`import.meta.url`): the sources, the tsc output and the bundle sit at different depths.
 */
export function appRootAbove(moduleUrl: string): string {
  let folder = dirname(fileURLToPath(moduleUrl));
  while (!existsSync(join(folder, 'host.json'))) {
    const parent = dirname(folder);
    if (parent === folder) throw new Error('Cannot find the app root (no host.json above this module)');
    folder = parent;
  }
  return folder;
}
