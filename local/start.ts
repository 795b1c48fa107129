/**
 * `npm start`: the API on http://localhost:7071/api (PORT) with embedded parts for every setting not
 * given, their data kept in `.local` (LOCAL_DATA_DIR). Settings come from the environment and, as in
 * `func start`, from local.settings.json's Values, Host.CORS and Host.CORSCredentials (the environment wins).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { retiredSettingsGiven } from '../shared/settings.js';
import { corsSettingsFromLocalSettings } from './cors.js';
import { localDataDir } from './defaults.js';
import { ensurePortFree, portSetting, StartError, stopOnStartError } from './ports.js';
import { appRoot, embedsIdentityProvider, startStack } from './stack.js';

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
if (stack.identityProvider) console.log('Get a token:  TOKEN=$(npm run -s token -- --role LMS.Admin)');
console.log('Press Ctrl+C to stop.\n');

// Serves until Ctrl+C or SIGTERM; a signal repeated while it stops changes nothing.
await new Promise((resolve) => ['SIGINT', 'SIGTERM'].forEach((signal) => process.on(signal, resolve)));
await stack.stop();
process.exit(0);
