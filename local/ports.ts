/** The ports of `npm start`, from PORT and LOCAL_IDP_PORT; a port that is taken is told in one line naming the setting that moves it. */
import { createServer } from 'node:http';
import { SETTINGS } from '../shared/settings.js';
import { close, listen } from './embedded-http.js';

/** A mistake the user can fix from its message alone: `npm start` prints the message, not a stack. */
export class StartError extends Error {}

type PortSetting = 'PORT' | 'LOCAL_IDP_PORT';
const WHAT: Record<PortSetting, string> = { PORT: "the API's", LOCAL_IDP_PORT: "the local identity provider's" };

export function portSetting(name: PortSetting): number {
  const value = process.env[name] || SETTINGS[name].default;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0 || number > 65535) throw new StartError(`${name} must be a port number (0 to 65535), not "${value}".`);
  return number;
}

/** Rejects with a StartError naming `setting` when something already listens on the port (0: any free port, nothing to check). */
export async function ensurePortFree(setting: PortSetting, port: number): Promise<void> {
  if (port === 0) return;
  const server = createServer();
  await listen(server, port, '127.0.0.1', 'port check').catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE') throw error;
    const example = `${setting}=${port + 10 <= 65535 ? port + 10 : port - 10} npm start`;
    throw new StartError(`Port ${port}, ${WHAT[setting]}, is in use (another \`npm start\`?): set ${setting} to a free port, e.g. ${example}`);
  });
  await close(server);
}

/** Ends `npm start` with the one line a StartError says; anything else is a bug, and keeps its stack. */
export function stopOnStartError(error: unknown): never {
  if (!(error instanceof StartError)) throw error;
  console.error(error.message);
  process.exit(1);
}

/**
 * What `npm start` runs before it builds (tools/before-start.mjs): a taken API port, most likely an
 * `npm start` of this checkout, stops it before it rebuilds dist/ under the stack running from it.
 */
export async function stopIfApiPortTaken(): Promise<void> {
  await ensurePortFree('PORT', portSetting('PORT')).catch(stopOnStartError);
}
