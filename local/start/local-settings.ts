/**
 * local.settings.json, read as `func start` reads it and checked before `npm start` builds: JSON, with the line
 * and column of a mistake; `Values` a map of strings, each named as a setting of shared/settings/catalog.ts (or as one
 * of the Functions host's and Node.js's, which func hands on too), with the setting a misspelled name is
 * nearest to; `Host` with func's three fields. Every mistake of the file is told at once.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, type MemberNode, type StringNode, type ValueNode } from '@humanwhocodes/momoa';
import leven from 'leven';
import { SETTINGS, type Setting } from '../../shared/settings/catalog.js';
import { corsSettingsFromLocalSettings } from '../host/cors.js';
import { StartError } from '../ports.js';

export const LOCAL_SETTINGS_FILE = 'local.settings.json';

export interface LocalSettings {
  /** Values, with Host.CORS and Host.CORSCredentials as the settings they stand for (Values win). */
  settings: Record<string, string>;
  /** Host.LocalHttpPort: the API's port when PORT is not set, as `func start --port` wins over it. */
  localHttpPort?: number;
}

const SETTING_NAMES = Object.keys(SETTINGS);
// The connections whose identity-based form is `<connection>__<property>` (queueServiceUri, tenantId, …).
const CONNECTIONS = new Set(SETTING_NAMES.filter((name) => name.includes('__')).map((name) => name.split('__')[0]!));
// Settings of the Functions host and of Node.js, which `func start` hands on to them as it does the app's.
const HOST_AND_RUNTIME = /^(AzureWebJobs|AzureFunctionsJobHost__|FUNCTIONS_|WEBSITE_|APPLICATIONINSIGHTS_|languageWorkers__|NODE_)/;
const TOP_LEVEL = ['IsEncrypted', 'Values', 'Host', 'ConnectionStrings'];
const HOST_FIELDS: Record<string, ValueNode['type']> = { LocalHttpPort: 'Number', CORS: 'String', CORSCredentials: 'Boolean' };

const KIND: Record<ValueNode['type'], string> = {
  String: 'a string',
  Number: 'a number',
  Boolean: 'true or false',
  Null: 'null',
  Object: 'an object',
  Array: 'an array',
  NaN: 'NaN',
  Infinity: 'Infinity',
};

/** A member of an object of local.settings.json: in JSON (not JSON5) its name is always a string. */
type Entry = MemberNode & { name: StringNode };

/** The name among `known` that `name` is most likely a misspelling of: the same but for case and underscores, or a letter or two away. */
export function nearest(name: string, known: readonly string[]): string | undefined {
  const plain = (text: string) => text.toLowerCase().replaceAll('_', '');
  const [best] = known
    .map((candidate) => ({ candidate, distance: plain(candidate) === plain(name) ? 0 : leven(name.toLowerCase(), candidate.toLowerCase()) }))
    .sort((a, b) => a.distance - b.distance);
  return best && best.distance <= Math.min(2, Math.floor(name.length / 4)) ? best.candidate : undefined;
}

/** The settings of local.settings.json in `root`, none when there is no file; every mistake in it is a StartError. */
export async function readLocalSettings(root: string): Promise<LocalSettings> {
  let text: string;
  try {
    text = await readFile(join(root, LOCAL_SETTINGS_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { settings: {} };
    throw error;
  }
  let document;
  try {
    document = parse(text);
  } catch (error) {
    const { line, column, offset, message } = error as { line?: number; column?: number; offset?: number; message: string };
    if (line === undefined || column === undefined || offset === undefined) throw new StartError(`${LOCAL_SETTINGS_FILE} is not valid JSON: ${message}`);
    const found = /^(\w+|\S)/.exec(text.slice(offset))?.[0];
    const reason = /end of input/.test(message) || found === undefined ? 'the file ends before the JSON does' : `unexpected ${JSON.stringify(found)}`;
    const afterComma = /^[}\]]$/.test(found ?? '') && /,\s*$/.test(text.slice(0, offset)) ? ' after a comma, which JSON does not allow there' : '';
    const source = text.split('\n')[line - 1] ?? '';
    const gutter = ' '.repeat(String(line).length);
    const place = `  ${line} | ${source}\n  ${gutter} | ${' '.repeat(column - 1)}^`;
    throw new StartError(`${LOCAL_SETTINGS_FILE}, line ${line}, column ${column}: not valid JSON, ${reason}${afterComma}\n${place}`);
  }

  const mistakes: string[] = [];
  const mistake = (node: { loc: { start: { line: number; column: number } } }, text: string) =>
    mistakes.push(`line ${node.loc.start.line}, column ${node.loc.start.column}: ${text}`);
  const misnamed = (member: Entry, where: string, known: readonly string[], what: string) => {
    const suggestion = nearest(member.name.value, known);
    mistake(member.name, `${where}${member.name.value} is not ${what}${suggestion ? `: did you mean ${suggestion}?` : ''}`);
  };
  const members = (node: ValueNode, where: string): Entry[] => {
    if (node.type === 'Object') return node.members as Entry[];
    mistake(node, `${where} is ${KIND[node.type]}, where ${LOCAL_SETTINGS_FILE} has an object`);
    return [];
  };
  const settings: Record<string, string> = {};
  const host: Record<string, unknown> = {};
  for (const member of members(document.body, 'The file')) {
    const field = member.name.value;
    if (field === 'Values') {
      for (const value of members(member.value, 'Values')) checkValue(value, settings, mistake, misnamed);
    } else if (field === 'Host') {
      for (const entry of members(member.value, 'Host')) {
        const type = HOST_FIELDS[entry.name.value];
        if (!type) misnamed(entry, 'Host.', Object.keys(HOST_FIELDS), 'a field func reads in Host');
        else if (entry.value.type !== type) mistake(entry.value, `Host.${entry.name.value} is ${KIND[entry.value.type]}, not ${KIND[type]}`);
        else host[entry.name.value] = (entry.value as { value: unknown }).value;
      }
    } else if (field === 'IsEncrypted') {
      if (member.value.type !== 'Boolean') mistake(member.value, `IsEncrypted is ${KIND[member.value.type]}, not true or false`);
      else if (member.value.value) mistake(member.value, 'the file is encrypted: `func settings decrypt` decrypts it; npm start reads plain values only');
    } else if (field === 'ConnectionStrings') {
      mistake(member.name, 'ConnectionStrings is not read by this app: its connections are settings, in Values');
    } else {
      misnamed(member, '', TOP_LEVEL, `a part of ${LOCAL_SETTINGS_FILE}`);
    }
  }
  const port = host.LocalHttpPort as number | undefined;
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port <= 65535)) {
    mistakes.push(`Host.LocalHttpPort is ${port}, not a port number (1 to 65535)`);
  }
  if (mistakes.length) {
    throw new StartError(
      `${LOCAL_SETTINGS_FILE} has ${mistakes.length === 1 ? 'a mistake' : `${mistakes.length} mistakes`}:\n${mistakes.map((text) => `  ${text}`).join('\n')}`,
    );
  }
  return { settings: { ...corsSettingsFromLocalSettings(host), ...settings }, ...(port === undefined ? {} : { localHttpPort: port }) };
}

/** One entry of Values: a string, named as a setting the app, the host or Node.js reads, and one that local.settings.json may hold. */
function checkValue(
  member: Entry,
  settings: Record<string, string>,
  mistake: (node: StringNode | ValueNode, text: string) => void,
  misnamed: (member: Entry, where: string, known: readonly string[], what: string) => void,
): void {
  const name = member.name.value;
  const setting = (SETTINGS as Record<string, Setting>)[name];
  if (setting?.environmentOnly) {
    const instead = name === 'PORT' ? ', or Host.LocalHttpPort here' : '';
    return mistake(member.name, `Values.${name} is read from the environment only (${name}=… npm start${instead})`);
  }
  const known = setting !== undefined || CONNECTIONS.has(name.split('__')[0]!);
  if (!known && (nearest(name, SETTING_NAMES) || !HOST_AND_RUNTIME.test(name))) {
    return misnamed(member, 'Values.', SETTING_NAMES, 'a setting of this app (docs/configuration.md lists them)');
  }
  if (member.value.type !== 'String') {
    return mistake(member.value, `Values.${name} is ${KIND[member.value.type]}: every value in Values is a string, as in "${name}": "…"`);
  }
  settings[name] = member.value.value;
}
