/**
 * The one list of settings (shared/settings/catalog.ts) against what reads settings and what shows them:
 * local.settings.example.json and docs/configuration.md are what `npm run settings` writes from it,
 * every binding of functions/ names a setting the example holds, and every setting the code reads
 * is on the list.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../../shared/settings/catalog.js';

const run = promisify(execFile);
const appRoot = fileURLToPath(new URL('../../../', import.meta.url));
const listed = new Set(Object.keys(SETTINGS));

/** The TypeScript sources of a folder. */
async function sources(folder: string): Promise<{ file: string; text: string }[]> {
  const files = (await readdir(join(appRoot, folder), { recursive: true })).filter((file) => file.endsWith('.ts'));
  return Promise.all(files.map(async (file) => ({ file: `${folder}/${file}`, text: await readFile(join(appRoot, folder, file), 'utf8') })));
}

async function exampleValues(): Promise<Record<string, string>> {
  return (JSON.parse(await readFile(join(appRoot, 'local.settings.example.json'), 'utf8')) as { Values: Record<string, string> }).Values;
}

describe('the list of settings', () => {
  it('is what local.settings.example.json and the table of docs/configuration.md show', async () => {
    // Rejects, with the reason on stderr, when `npm run settings` would write something else.
    await expect(run(process.execPath, ['dist/tools/write-settings.js', '--check'], { cwd: appRoot })).resolves.toBeDefined();
  });

  it('gives every %SETTING% a binding of functions/ reads a value in local.settings.example.json, and every connection a setting', async () => {
    const values = await exampleValues();
    const expressions = new Set<string>();
    const connections = new Set<string>();
    for (const { text } of await sources('functions')) {
      for (const [, name] of text.matchAll(/%(\w+)%/g)) expressions.add(name!);
      for (const [, name] of text.matchAll(/\bconnection: '(\w+)'/g)) connections.add(name!);
    }
    expect(expressions.size, 'the bindings were found').toBeGreaterThan(0);
    for (const name of expressions) {
      // `func start` cannot resolve a binding expression to nothing.
      expect(values[name], `${name} in local.settings.example.json`).toMatch(/\S/);
      expect(SETTINGS[name as keyof typeof SETTINGS]?.azure, `${name} is required in Azure`).toBe('required');
    }
    // A connection is a setting of that name, or an identity-based group of `<name>__…` settings.
    for (const name of connections)
      expect(
        Object.keys(values).some((setting) => setting === name || setting.startsWith(`${name}__`)),
        name,
      ).toBe(true);
  });

  it('has every setting that the app and the local stack read', async () => {
    // Not settings: Node's own variables, Azure's (WEBSITE_INSTANCE_ID), what the local stack hands its host process, and the listener's token.
    const notSettings = new Set(['PATH', 'NODE_PATH', 'NODE_EXTRA_CA_CERTS', 'WEBSITE_INSTANCE_ID', 'LOCAL_PORT', 'TOKEN']);
    const read = /\b(?:process\.env|env|environment|hostEnvironment)\.(\w+)|\bgiven\((?:options\.)?settings, '(\w+)'\)|\bport\('(\w+)'/g;
    const unlisted: string[] = [];
    for (const folder of ['functions', 'shared', 'local', 'tools']) {
      for (const { file, text } of await sources(folder)) {
        for (const match of text.matchAll(read)) {
          const name = match.slice(1).find(Boolean)!;
          // `AzureWebJobsStorage__queueServiceUri` is the identity-based form of `AzureWebJobsStorage`.
          const setting = name.split('__')[0]!;
          if (!listed.has(setting) && !notSettings.has(setting)) unlisted.push(`${name} (${file})`);
        }
      }
    }
    expect(unlisted).toEqual([]);
  });
});
