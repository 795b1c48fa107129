/** package.json's `main` read as Azure's Node worker reads it: a path or a glob (the worker's is globby's), every file it matches, none an error. */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appFiles } from '../../../local/host/registrations.js';

describe("the app's files, from package.json's main", () => {
  let app: string;
  const withMain = (main: string) => writeFile(join(app, 'package.json'), JSON.stringify({ main }));

  beforeAll(async () => {
    app = await mkdtemp(join(tmpdir(), 'lms-app-files-'));
    for (const folder of ['dist/b', 'dist/a']) await mkdir(join(app, folder), { recursive: true });
    for (const file of ['dist/b/two.js', 'dist/a/one.js', 'dist/a/one.js.map', 'dist/index.js']) await writeFile(join(app, file), '');
  });
  afterAll(() => rm(app, { recursive: true, force: true }));

  it('takes every file a glob matches, in folders too, in name order', async () => {
    await withMain('dist/**/*.js');
    expect(await appFiles(app)).toEqual(['dist/a/one.js', 'dist/b/two.js', 'dist/index.js'].map((file) => join(app, file)));
  });

  it('takes a path as the one file it names', async () => {
    await withMain('dist/index.js');
    expect(await appFiles(app)).toEqual([join(app, 'dist', 'index.js')]);
  });

  it('refuses a main that matches no file, as the worker does', async () => {
    await withMain('dist/*.mjs');
    await expect(appFiles(app)).rejects.toThrow(`Found zero files matching package.json's "main": dist/*.mjs`);
  });
});
