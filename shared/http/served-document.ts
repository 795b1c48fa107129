import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { appRootAbove } from '../lib/app-root.js';
import { lazily } from '../lib/lazy.js';

/**
 * openapi.json at the app root: `npm run openapi` writes it there, the deployment carries it there,
 * and the function serving `/api/openapi.json` reads it from there.
 */
export function documentFile(): string {
  return join(appRootAbove(import.meta.url), 'openapi.json');
}

/**
 * The document as the app carries it, read once per process. In Azure a function cannot see the others'
 * registrations: this document, written from them before deployment, is what tells the app its routes.
 */
export const servedDocument = lazily(async () => JSON.parse(await readFile(documentFile(), 'utf8')) as unknown);
