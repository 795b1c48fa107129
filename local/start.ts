/**
 * `npm start`: the API on http://localhost:7071/api (PORT) with embedded parts for every setting not
 * given, their data kept in `.local` (LOCAL_DATA_DIR). Settings come from the environment and, as in
 * `func start`, from local.settings.json's Values, Host.CORS and Host.CORSCredentials (the environment wins).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { retiredSettingsGiven, SETTINGS } from '../shared/settings.js';
import { corsSettingsFromLocalSettings } from './cors.js';
import { localDataDir } from './defaults.js';
import { ensurePortFree, portSetting, StartError, stopOnStartError } from './ports.js';
import { appRoot, embedsIdentityProvider, startStack } from './stack.js';

/** The settings given a value other than their default, each as NAME=value with the value quoted for a POSIX shell. */
function movedSettings(values: Partial<Record<'PORT' | 'LOCAL_IDP_PORT' | 'LOCAL_DATA_DIR', string>>): [string, string][] {
  const quoted = (value: string) => (/^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`);
  return (Object.entries(values) as [keyof typeof values, string | undefined][])
    .filter(([name, value]) => value && value !== SETTINGS[name].default)
    .map(([name, value]) => [name, `${name}=${quoted(value!)}`]);
}

/** The `NAME=value ` prefix of the settings among `names` (all when not given). */
const withSettings = (moved: [string, string][], names?: string[]) =>
  moved
    .filter(([name]) => !names || names.includes(name))
    .map(([, setting]) => `${setting} `)
    .join('');

async function localSettings(root: string): Promise<Record<string, string>> {
  try {
    const file = JSON.parse(await readFile(join(root, 'local.settings.json'), 'utf8')) as { Values?: Record<string, string>; Host?: Record<string, unknown> };
    return { ...corsSettingsFromLocalSettings(file.Host), ...file.Values };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new StartError(`local.settings.json is not valid JSON: ${(error as Error).message}`);
  }
}

/** Everything a user can set right is checked before any part starts, so that a mistake is one line, not a stack. */
async function startOptions() {
  const root = appRoot();
  const apiPort = portSetting('PORT');
  const identityProviderPort = portSetting('LOCAL_IDP_PORT');
  const settings = { ...(await localSettings(root)), ...process.env };
  // A retired setting would otherwise start an embedded part in place of what it names.
  const retired = retiredSettingsGiven(settings);
  if (retired.length) throw new StartError(`Configuration error: ${retired.join('; ')}`);
  await ensurePortFree('PORT', apiPort);
  if (embedsIdentityProvider(settings)) await ensurePortFree('LOCAL_IDP_PORT', identityProviderPort);
  return { apiPort, identityProviderPort, dataDir: localDataDir(root), settings, hostOutput: 'inherit' as const };
}

const stack = await startOptions().then(startStack).catch(stopOnStartError);

const functions = [
  ...stack.routes.map(({ name, methods, template }) => ({ name, what: `[${methods.join(',')}] http://localhost:${stack.port}/${template}` })),
  ...stack.queueFunctions.map(({ name, queue }) => ({ name, what: `[queue] ${queue}` })),
  ...stack.timerFunctions.map(({ name, schedule }) => ({ name, what: `[timer] ${schedule}` })),
  ...stack.cosmosFunctions.map(({ name, container, leaseContainer }) => ({ name, what: `[cosmosDB] ${container} (leases in ${leaseContainer})` })),
];
const width = Math.max(...functions.map(({ name }) => name.length));
console.log(`\nFunctions:\n${functions.map(({ name, what }) => `  ${name.padEnd(width)}  ${what}`).join('\n')}`);
console.log(`\nEmbedded parts: ${stack.embedded.join('; ') || 'none (every setting is given)'}`);
console.log(`\nThe API is at ${stack.apiBaseUrl}`);
if (stack.environment.CORS_ALLOWED_ORIGINS) console.log(`Browsers may call it from: ${stack.environment.CORS_ALLOWED_ORIGINS}`);
// Printed commands work as printed in a new terminal: each carries the settings it needs that are not the defaults.
const moved = movedSettings({ PORT: String(stack.port), LOCAL_IDP_PORT: process.env.LOCAL_IDP_PORT, LOCAL_DATA_DIR: process.env.LOCAL_DATA_DIR });
if (stack.identityProvider) console.log(`Get a token:  TOKEN=$(${withSettings(moved, ['LOCAL_DATA_DIR'])}npm run -s token -- --role LMS.Admin)`);
if (moved.length) console.log(`Its settings, for the commands of the README in other terminals:  export ${withSettings(moved).trim()}`);
console.log('Press Ctrl+C to stop.\n');

// Serves until Ctrl+C or SIGTERM; a signal repeated while it stops changes nothing.
await new Promise((resolve) => ['SIGINT', 'SIGTERM'].forEach((signal) => process.on(signal, resolve)));
await stack.stop();
process.exit(0);
