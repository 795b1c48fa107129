/**
 * `npm run settings`: writes local.settings.example.json and the settings table of
 * docs/configuration.md from the one list of settings, shared/settings/catalog.ts, and infra/generated.json,
 * what the Bicep of infra/ takes from the code: the containers of shared/data/containers.ts, the
 * queues and the app settings that Azure requires and that have a value to start from. `--check`
 * writes nothing and fails when a file is not what the code would write.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { appRootAbove } from '../shared/lib/app-root.js';
import { CONTAINERS } from '../shared/data/containers.js';
import { SETTINGS, type Setting } from '../shared/settings/catalog.js';

const root = appRootAbove(import.meta.url);
const EXAMPLE_FILE = join(root, 'local.settings.example.json');
const DOC_FILE = join(root, 'docs', 'configuration.md');
const INFRA_FILE = join(root, 'infra', 'generated.json');
const TABLE_START = '<!-- The table is written by `npm run settings` from shared/settings/catalog.ts: change the list, not the table. -->';
const TABLE_END = '<!-- End of the settings table. -->';

const settings = Object.entries(SETTINGS) as [string, Setting][];

/**
 * What `func start` and `npm start` read: every setting but the environment's own and the retired ones in `Values`,
 * empty (not given) unless Azure requires it and it has a value to start from, since a binding
 * such as `%RAG_QUEUE_NAME%` cannot resolve to nothing. `Host` holds what `func start` reads there.
 */
function exampleLocalSettings(): string {
  const values = Object.fromEntries(
    settings
      .filter(([, setting]) => !setting.environmentOnly && !setting.hostField && setting.azure !== 'retired')
      .map(([name, setting]) => [name, setting.azure === 'required' || setting.azure === 'platform' ? (setting.default ?? '') : '']),
  );
  const host = {
    LocalHttpPort: Number(SETTINGS.PORT.default),
    // The origin of `npm run sample`'s task pane.
    CORS: `http://localhost:${SETTINGS.SAMPLE_PORT.default}`,
    CORSCredentials: (SETTINGS.CORS_SUPPORT_CREDENTIALS.default as string) === 'true',
  };
  return `${JSON.stringify({ IsEncrypted: false, Values: values, Host: host }, null, 2)}\n`;
}

/** What infra/ deploys from the code: `loadJsonContent('generated.json')` in its Bicep. */
function infrastructure(): string {
  const withValues = settings.filter(([, setting]) => setting.azure === 'required' && setting.default !== undefined);
  const queues = settings.filter(([, setting]) => setting.queue).flatMap(([, setting]) => [setting.default!, `${setting.default!}-poison`]);
  const generated = {
    $comment: 'Written by `npm run settings` from shared/settings/catalog.ts and shared/data/containers.ts: change those, not this file.',
    containers: Object.values(CONTAINERS),
    queues,
    appSettings: Object.fromEntries(withValues.map(([name, setting]) => [name, setting.default])),
  };
  return `${JSON.stringify(generated, null, 2)}\n`;
}

function whereLocally(setting: Setting): string {
  if (setting.replacedBy) return `; a configuration error when given (\`npm start\` refuses to start): set ${setting.replacedBy} instead`;
  if (setting.environmentOnly) return '; environment only';
  if (setting.hostField) return `; \`Host.${setting.hostField}\` in \`local.settings.json\``;
  return '';
}

function settingsTable(): string {
  const rows = settings.map(
    ([name, setting]) =>
      `| \`${name}\` | ${setting.azure} | ${setting.default === undefined ? '' : `\`${setting.default}\``} | ${setting.description}${whereLocally(setting)} |`,
  );
  return [TABLE_START, '', '| name | in Azure | default | meaning |', '|---|---|---|---|', ...rows, '', TABLE_END].join('\n');
}

function withTable(document: string): string {
  const start = document.indexOf(TABLE_START);
  const end = document.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`${DOC_FILE} has lost the markers around its settings table`);
  return `${document.slice(0, start)}${settingsTable()}${document.slice(end + TABLE_END.length)}`;
}

const writtenDoc = await readFile(DOC_FILE, 'utf8');
const wanted = [
  [EXAMPLE_FILE, await readFile(EXAMPLE_FILE, 'utf8').catch(() => ''), exampleLocalSettings()],
  [DOC_FILE, writtenDoc, withTable(writtenDoc)],
  [INFRA_FILE, await readFile(INFRA_FILE, 'utf8').catch(() => ''), infrastructure()],
] as const;

if (process.argv.includes('--check')) {
  const stale = wanted.filter(([, written, current]) => written !== current).map(([file]) => file);
  if (stale.length) {
    console.error(`Not what the code would write: ${stale.join(', ')}. Run \`npm run settings\` and commit the result.`);
    process.exitCode = 1;
  }
} else {
  for (const [file, , current] of wanted) await writeFile(file, current);
  console.log(`Wrote ${wanted.map(([file]) => file).join(', ')}`);
}
