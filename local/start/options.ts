/**
 * What `npm start` checks before it builds (tools/before-start.mjs runs this from the sources) and again before it
 * starts (local/start.ts), so that a mistake is one message at once, not a stack trace after the build or a hang:
 * local.settings.json, the retired settings, the ports and data folder another stack may hold, and the database,
 * when one is given. Settings come from the environment and, as in `func start`, from local.settings.json (the
 * environment wins).
 */
import { connect } from 'node:net';
import { retiredSettingsGiven, SETTINGS } from '../../shared/settings/catalog.js';
import { embedsIdentityProvider, given, localDataDir } from '../defaults.js';
import { readLocalSettings } from './local-settings.js';
import { ensureOwnPlace, portSetting, StartError } from '../ports.js';

export { stopOnStartError } from '../ports.js';

// How long a given database has to accept a connection at start.
const DATABASE_CONNECT_TIMEOUT_MS = 5_000;

export async function startOptions(root: string, environment: Record<string, string | undefined> = process.env) {
  const local = await readLocalSettings(root);
  const settings = { ...local.settings, ...environment };
  // A retired setting would otherwise start an embedded part in place of what it names.
  const retired = retiredSettingsGiven(settings);
  if (retired.length) throw new StartError(`Configuration error: ${retired.join('; ')}`);
  const port = portSetting('PORT', environment);
  // As `func start --port` wins over Host.LocalHttpPort, PORT does.
  const apiPort = port ?? local.localHttpPort ?? Number(SETTINGS.PORT.default);
  const identityProviderPort = portSetting('LOCAL_IDP_PORT', environment) ?? Number(SETTINGS.LOCAL_IDP_PORT.default);
  const dataDir = localDataDir(root, environment);
  await ensureOwnPlace({
    root,
    apiPort,
    apiPortFrom: port === undefined && local.localHttpPort !== undefined ? 'Host.LocalHttpPort' : 'PORT',
    ...(embedsIdentityProvider(settings) ? { identityProviderPort } : {}),
    dataDir,
  });
  await ensureDatabaseReachable(settings);
  return { apiPort, identityProviderPort, dataDir, settings };
}

/** A database that is given must take a connection now: a name that does not resolve, or a port nobody listens on, is one message at start. */
async function ensureDatabaseReachable(settings: Record<string, string | undefined>): Promise<void> {
  const connection = given(settings, 'COSMOS_CONNECTION');
  const endpoint = connection ? /(?:^|;)\s*AccountEndpoint=([^;]+)/i.exec(connection)?.[1] : given(settings, 'COSMOS_CONNECTION__accountEndpoint');
  // Nothing to reach (the embedded database), or a setting the app itself refuses with its own message.
  if (!endpoint || !URL.canParse(endpoint)) return;
  const url = new URL(endpoint);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(url.port || (url.protocol === 'http:' ? 80 : 443));
  const failure = await new Promise<string | undefined>((resolve) => {
    const socket = connect({ host, port, timeout: DATABASE_CONNECT_TIMEOUT_MS });
    const end = (reason?: string) => {
      socket.destroy();
      resolve(reason);
    };
    socket.once('connect', () => end());
    socket.once('timeout', () => end(`no answer within ${DATABASE_CONNECT_TIMEOUT_MS / 1000} s`));
    socket.once('error', (error: NodeJS.ErrnoException) => end(error.code ?? error.message));
  });
  if (failure === undefined) return;
  const setting = connection ? 'COSMOS_CONNECTION' : 'COSMOS_CONNECTION__accountEndpoint';
  throw new StartError(
    `The database of ${setting}, ${url.origin}, cannot be reached (${failure}): check the account's name, this machine's network ` +
      '(a VPN, a firewall), or that the emulator runs. Without the setting, `npm start` embeds a database of its own.',
  );
}
