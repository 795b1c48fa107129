// `npm run package`: the folder that `azd deploy` uploads (azure.yaml's `dist`), dist/package unless another is
// given, made afresh with what the Functions host loads and nothing else: host.json, package.json (whose `main`
// names the functions), the esbuild bundle bundled anew into it (no chunk of an earlier build), the API
// description openapi.json, and swagger-ui-dist, the one package read at run time (the reference page's files).
import { execFile } from 'node:child_process';
import { cp, mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath, URL } from 'node:url';
import { promisify } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = resolve(process.argv[2] ?? join(root, 'dist', 'package'));

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
await promisify(execFile)(process.execPath, [join(root, 'tools', 'bundle.mjs'), join(out, 'dist', 'app')]);
for (const file of ['host.json', 'package.json', 'openapi.json']) await cp(join(root, file), join(out, file));
await cp(join(root, 'node_modules', 'swagger-ui-dist'), join(out, 'node_modules', 'swagger-ui-dist'), { recursive: true });
console.log(`The deployment package is in ${out}`);
