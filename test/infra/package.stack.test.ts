/**
 * What `azd deploy` uploads: azure.yaml as azd's schema requires it, and the package `npm run package` writes
 * (azure.yaml's prepackage hook), built here afresh, holding exactly what docs/deploy.md says the Functions host
 * loads, and enough for a host to serve from it alone.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startHostProcess } from '../../local/stack.js';
import { stack, stackAppSettings } from '../support/stack.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

describe('azure.yaml', () => {
  let project: any;
  beforeAll(async () => {
    project = parse(await readFile(join(root, 'azure.yaml'), 'utf8'));
  });

  it("has what azd's schema requires: a name azd accepts, and services with a host (and, for a function, a project)", () => {
    expect(project.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(Object.keys(project.services).length).toBeGreaterThan(0);
    for (const [name, service] of Object.entries<any>(project.services)) {
      expect(service.host, name).toEqual(expect.any(String));
      if (service.host === 'function') expect(service.project, name).toEqual(expect.any(String));
    }
  });

  it('deploys the api service, from the folder `npm run package` writes, as built, to the Function App infra/ tags for it', async () => {
    const api = project.services.api;
    expect(api).toMatchObject({ project: '.', host: 'function', dist: 'dist/package', remoteBuild: false });
    expect(api.hooks.prepackage.run).toMatch(/^npm run (-s )?package$/);
    const { scripts } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
    expect(scripts.package).toBe('node tools/package.mjs');
    expect(await readFile(join(root, 'tools', 'package.mjs'), 'utf8')).toContain("join(root, 'dist', 'package')");
    const snapshot = JSON.parse(await readFile(join(root, 'dist', 'infra', 'default.snapshot.json'), 'utf8'));
    const sites = snapshot.predictedResources.filter((resource: any) => resource.type === 'Microsoft.Web/sites');
    expect(sites.map((site: any) => site.tags['azd-service-name'])).toEqual(['api']);
  });
});

/** Every file under a folder, as paths relative to it with forward slashes. */
async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => relative(folder, join(entry.parentPath, entry.name)).split(sep).join('/'));
}

/** The paths docs/deploy.md lists as the package's contents, between its markers: `file` or `folder/`. */
async function documentedContents(): Promise<string[]> {
  const guide = await readFile(join(root, 'docs', 'deploy.md'), 'utf8');
  const list = /<!-- The package's contents[^>]*-->([\s\S]*?)<!-- End of the package's contents\. -->/.exec(guide);
  if (!list) throw new Error("docs/deploy.md has lost the markers around the package's contents");
  return [...list[1]!.matchAll(/^- `([^`]+)`/gm)].map((match) => match[1]!);
}

describe('the deployment package', () => {
  let folder: string;
  const stops: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'lms-package-'));
    await run(process.execPath, [join(root, 'tools', 'package.mjs'), folder], { cwd: root });
  }, 120_000);
  afterAll(async () => {
    for (const stop of stops) await stop();
    await rm(folder, { recursive: true, force: true });
  });

  it('holds what docs/deploy.md says the Functions host loads, and nothing else', async () => {
    const documented = await documentedContents();
    expect(documented.length).toBeGreaterThan(0);
    const files = await filesUnder(folder);
    const covered = (file: string) => documented.some((path) => (path.endsWith('/') ? file.startsWith(path) : file === path));
    expect(files.filter((file) => !covered(file))).toEqual([]);
    for (const path of documented)
      expect(
        files.some((file) => (path.endsWith('/') ? file.startsWith(path) : file === path)),
        path,
      ).toBe(true);
    // Every function of the code, and no chunk of an earlier build: the bundle was made afresh.
    const functions = (await readdir(join(root, 'functions'))).filter((file) => file.endsWith('.ts')).map((file) => file.replace(/\.ts$/, '.js'));
    expect(
      files
        .filter((file) => /^dist\/app\/functions\/[^/]+\.js$/.test(file))
        .map((file) => file.split('/').at(-1))
        .sort(),
    ).toEqual(functions.sort());
  });

  it('is enough for a Functions host to serve the API description and the reference page from it alone', async () => {
    const host = await startHostProcess({
      port: 0,
      appRoot: folder,
      environment: {
        ...stackAppSettings,
        AzureWebJobsStorage: stack.storageConnectionString,
        RAG_QUEUE_NAME: `rag-package-${crypto.randomUUID().slice(0, 8)}`,
      },
      extraCaCerts: stack.caCertPath,
    });
    stops.push(host.stop);
    const base = `http://127.0.0.1:${host.port}/api`;
    const description = await fetch(`${base}/openapi.json`);
    expect(description.status).toBe(200);
    expect(await description.json()).toEqual(JSON.parse(await readFile(join(root, 'openapi.json'), 'utf8')));
    expect((await fetch(`${base}/docs`)).status).toBe(200);
    const bundle = await fetch(`${base}/docs/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect((await bundle.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  }, 60_000);
});
