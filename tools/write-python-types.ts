/**
 * `npm run openapi` (through `npm run client`): writes the Python client's types,
 * clients/python/lms_platform_api/schema.py, from openapi.json. `--check` writes nothing and fails
 * when the file is not what the document gives.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { documentFile } from '../shared/http/served-document.js';
import { pythonTypes, type OpenApiDocument } from './python-types.js';

const source = documentFile();
const target = join(dirname(source), 'clients', 'python', 'lms_platform_api', 'schema.py');
const generated = pythonTypes(JSON.parse(await readFile(source, 'utf8')) as OpenApiDocument);

if (process.argv.includes('--check')) {
  if ((await readFile(target, 'utf8').catch(() => '')) !== generated) {
    console.error('clients/python/lms_platform_api/schema.py is not what openapi.json gives: run `npm run openapi` and commit the result.');
    process.exitCode = 1;
  }
} else {
  await writeFile(target, generated);
  console.log(`Wrote ${target}`);
}
