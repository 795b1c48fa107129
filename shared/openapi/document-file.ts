import { join } from 'node:path';
import { appRootAbove } from '../app-root.js';

/**
 * openapi.json at the app root: `npm run openapi` writes it there, the deployment carries it there,
 * and the function serving `/api/openapi.json` reads it from there.
 */
export function documentFile(): string {
  return join(appRootAbove(import.meta.url), 'openapi.json');
}
