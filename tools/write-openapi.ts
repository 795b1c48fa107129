/**
 * `npm run openapi`: writes openapi.json, the API's OpenAPI document, from what the function files
 * register. It loads the tsc output of every file of package.json's `main`, with the local host's
 * registration collector standing in for `@azure/functions-core` as Azure's worker supplies it, and
 * builds the document from the registrations (see openapi-document.ts). The tsc output rather than the
 * bundle, so that the schemas the handlers hold are the very objects components.ts names. `--check`
 * writes nothing and fails when openapi.json is not what the code would write.
 */
import { fork } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { appFiles, registrations, triggerOf, type Registration } from '../local/host/registrations.js';
import { buildOpenApiDocument, type HttpRegistration } from './openapi-document.js';
import { documentFile } from '../shared/http/served-document.js';

const target = documentFile();
const appRoot = dirname(target);
const collector = join(appRoot, 'local', 'host', 'functions-core');

/** The HTTP functions among the registrations, as their `app.http` calls described them. */
function httpRegistrations(registrations: Registration[]): HttpRegistration[] {
  return registrations.flatMap((registration) => {
    const trigger = triggerOf(registration, 'httpTrigger');
    const { name } = registration.metadata;
    return trigger ? [{ name, route: trigger.route ?? name, methods: trigger.methods ?? ['GET', 'POST'], handler: registration.callback }] : [];
  });
}

async function currentDocument(): Promise<string> {
  for (const file of await appFiles(appRoot)) await import(pathToFileURL(join(appRoot, 'dist', 'functions', basename(file))).href);
  const hostJson = JSON.parse(await readFile(join(appRoot, 'host.json'), 'utf8')) as { extensions?: { http?: { routePrefix?: string } } };
  // The API's version is the client package's: the client is this document in TypeScript, so both change together.
  const { version } = JSON.parse(await readFile(join(appRoot, 'client', 'package.json'), 'utf8')) as { version: string };
  const document = buildOpenApiDocument(httpRegistrations(registrations()), { version, routePrefix: hostJson.extensions?.http?.routePrefix ?? 'api' });
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (process.env.NODE_PATH !== collector) {
  // NODE_PATH is read when Node starts, so the collector needs a process of its own.
  const child = fork(fileURLToPath(import.meta.url), process.argv.slice(2), { env: { ...process.env, NODE_PATH: collector }, stdio: 'inherit' });
  process.exitCode = await new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
} else if (process.argv.includes('--check')) {
  const written = await readFile(target, 'utf8').catch(() => '');
  if (written !== (await currentDocument())) {
    console.error('openapi.json is not what the code describes: run `npm run openapi` and commit the result.');
    process.exitCode = 1;
  }
} else {
  await writeFile(target, await currentDocument());
  console.log(`Wrote ${target}`);
}
