/**
 * What dist/ was built from (tools/built-from.ts), on a checkout of a few files in a folder of the test's: `npm start`
 * skips the build only while the build's every input and every output is as the last successful build left it.
 */
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { distIsCurrent, forgetBuild, recordBuild, sourcesFingerprint } from '../../tools/built-from.js';

let root: string;

async function write(path: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), content);
}

/** A build: the record goes first, the outputs are written, then the record of the sources as they were before it. */
async function build(): Promise<void> {
  const sources = await sourcesFingerprint(root);
  await forgetBuild(root);
  await write('dist/functions/projects-get.js', 'built');
  await write('client/dist/index.js', 'built');
  await recordBuild(root, sources);
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lms-built-from-'));
  for (const path of ['package.json', 'package-lock.json', 'tsconfig.json', 'host.json', 'openapi.json', 'node_modules/.package-lock.json'])
    await write(path, '{}');
  for (const path of ['functions/projects-get.ts', 'shared/settings.ts', 'local/start.ts', 'tools/token.ts', 'client/src/index.ts', 'patches/a.patch']) {
    await write(path, `// ${path}`);
  }
  await write('docs/local-stack.md', '# The local stack');
  await write('test/unit/a.test.ts', '// a test');
});
afterEach(() => rm(root, { recursive: true, force: true }));

describe('what dist/ was built from', () => {
  it('is current after a build, and stays so while nothing it is built from changes', async () => {
    expect(await distIsCurrent(root)).toBe(false);
    await build();
    expect(await distIsCurrent(root)).toBe(true);
    // Neither the docs nor the tests are built.
    await write('docs/local-stack.md', '# Changed');
    await write('test/unit/a.test.ts', '// changed');
    expect(await distIsCurrent(root)).toBe(true);
  });

  it('stays current when other commands write beside it: the compiled Bicep, the Bicep CLI restored, azd’s package', async () => {
    await build();
    await write('dist/infra/main.json', '{}');
    await write('tools/bicep/obj/project.assets.json', '{}');
    await write('dist/package/host.json', '{}');
    expect(await distIsCurrent(root)).toBe(true);
  });

  it.each([
    ['a source', 'shared/settings.ts'],
    ["the local stack's source", 'local/start.ts'],
    ['a new source', 'functions/tasks-get.ts'],
    ["the client's source", 'client/src/index.ts'],
    ['the configuration', 'tsconfig.json'],
    ['the scripts and dependencies', 'package.json'],
    ['the locked versions', 'package-lock.json'],
    ['the installed packages', 'node_modules/.package-lock.json'],
    ['a patch of a package', 'patches/a.patch'],
    ['the OpenAPI document the build checks', 'openapi.json'],
  ])('is stale once %s changes (%s), until the next build', async (_what, path) => {
    await build();
    await write(path, '// changed');
    expect(await distIsCurrent(root)).toBe(false);
    await build();
    expect(await distIsCurrent(root)).toBe(true);
  });

  it('is stale once anything else writes to dist/ (a compile alone, a hand), even with the same sources', async () => {
    await build();
    const output = join(root, 'dist/functions/projects-get.js');
    const later = new Date(Date.now() + 60_000);
    await utimes(output, later, later);
    expect(await distIsCurrent(root)).toBe(false);
    await build();
    await write('dist/functions/stray.js', 'left by another build');
    expect(await distIsCurrent(root)).toBe(false);
  });

  it('is stale while a build runs and after one that failed: the record goes before the build changes anything', async () => {
    await build();
    const sources = await sourcesFingerprint(root);
    await forgetBuild(root);
    expect(await distIsCurrent(root)).toBe(false);
    // A build that fails never records; one that succeeds records the sources as they were when it began.
    await write('shared/settings.ts', '// changed during the build');
    await recordBuild(root, sources);
    expect(await distIsCurrent(root)).toBe(false);
  });
});
