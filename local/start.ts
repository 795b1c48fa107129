/**
 * `npm start`: the API on http://localhost:7071/api (PORT) with embedded parts for every setting not
 * given, their data kept in `.local` (LOCAL_DATA_DIR). Settings come from the environment and, as in
 * `func start`, from local.settings.json (the environment wins); local/start/options.ts checks them all
 * first, as tools/before-start.mjs did before the build.
 */
import { SETTINGS } from '../shared/settings/catalog.js';
import { shellQuoted } from './ports.js';
import { appRoot, startStack } from './stack.js';
import { startOptions, stopOnStartError } from './start/options.js';

type MovableSetting = 'PORT' | 'LOCAL_IDP_PORT' | 'LOCAL_DATA_DIR';

/** `NAME=value ` for each of the settings that is not its default, as a shell reads it back. */
const settingsPrefix = (values: Partial<Record<MovableSetting, string>>): string =>
  (Object.entries(values) as [MovableSetting, string | undefined][])
    .filter(([name, value]) => value && value !== SETTINGS[name].default)
    .map(([name, value]) => `${name}=${shellQuoted(value!)} `)
    .join('');

const stack = await startOptions(appRoot())
  .then((options) => startStack({ ...options, hostOutput: 'inherit' }))
  .catch(stopOnStartError);

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
const { LOCAL_IDP_PORT, LOCAL_DATA_DIR } = process.env;
if (stack.identityProvider) console.log(`Get a token:  TOKEN=$(${settingsPrefix({ LOCAL_DATA_DIR })}npm run -s token -- --role LMS.Admin)`);
const moved = settingsPrefix({ PORT: String(stack.port), LOCAL_IDP_PORT, LOCAL_DATA_DIR }).trim();
if (moved) console.log(`Its settings, for the commands of the README in other terminals:  export ${moved}`);
console.log('Press Ctrl+C to stop.\n');

// Serves until Ctrl+C or SIGTERM; a signal repeated while it stops changes nothing.
await new Promise((resolve) => ['SIGINT', 'SIGTERM'].forEach((signal) => process.on(signal, resolve)));
await stack.stop();
process.exit(0);
