/**
 * The ports and the data folder a stack takes. `npm start` checks, before it builds and again before it starts,
 * that no other stack (or program) holds one of them; if one does, one message names every setting that gives a
 * second stack its own (PORT, LOCAL_IDP_PORT, LOCAL_DATA_DIR), with values that are free now.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { isAbsolute, join, relative } from 'node:path';
import { close, listen } from './embedded-http.js';

/** A mistake the user can fix from its message alone: `npm start` prints the message, not a stack. */
export class StartError extends Error {}

export type PortSetting = 'PORT' | 'LOCAL_IDP_PORT';

/** A port setting of `environment`, undefined when it is not set; anything but a port number is a StartError. */
export function portSetting(name: PortSetting, environment: Record<string, string | undefined>): number | undefined {
  const value = environment[name];
  if (!value) return undefined;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new StartError(`${name} must be a port number (0 to 65535), not "${value}".`);
  return Number(value);
}

export interface StackPlace {
  /** The folder relative data folders are taken from. */
  root: string;
  apiPort: number;
  /** What set the API's port, as the message names it. */
  apiPortFrom: 'PORT' | 'Host.LocalHttpPort';
  /** Only when the stack embeds the identity provider. */
  identityProviderPort?: number;
  dataDir: string;
}

// The file in a data folder that names the process of the stack using it, while it runs.
const CLAIM_FILE = 'stack.json';

/** True when something listens on the port already (0 is any free port: never taken). */
async function portTaken(port: number): Promise<boolean> {
  if (port === 0) return false;
  const server = createServer();
  try {
    await listen(server, port, '127.0.0.1', 'port check');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') return true;
    throw error;
  }
  await close(server);
  return false;
}

/** The process of another running stack that uses the data folder, if one does (a claim left by a crash names a process that is gone). */
async function dataFolderHolder(dataDir: string): Promise<number | undefined> {
  const claim = await readFile(join(dataDir, CLAIM_FILE), 'utf8').catch(() => undefined);
  const pid = Number((JSON.parse(claim ?? '{}') as { pid?: unknown }).pid);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

/** Marks the data folder as this process's stack's until the returned release; another stack's is a StartError. */
export async function claimDataFolder(dataDir: string, ports: { apiPort: number; identityProviderPort?: number }): Promise<() => Promise<void>> {
  await mkdir(dataDir, { recursive: true });
  const holder = await dataFolderHolder(dataDir);
  if (holder !== undefined) throw new StartError(`The data folder ${dataDir} (LOCAL_DATA_DIR) is in use by the stack of process ${holder}.`);
  const file = join(dataDir, CLAIM_FILE);
  await writeFile(file, `${JSON.stringify({ pid: process.pid, ...ports })}\n`);
  return () => rm(file, { force: true });
}

/** A port near `port` (10 up, then 20, …) that is free now and not in `besides`. */
async function freePortNear(port: number, besides: Set<number>): Promise<number> {
  for (let candidate = port + 10; candidate <= 65535; candidate += 10) {
    if (!besides.has(candidate) && !(await portTaken(candidate))) return candidate;
  }
  return 0;
}

/** Rejects with one StartError when another stack or program holds a port or the data folder of this one. */
export async function ensureOwnPlace(place: StackPlace): Promise<void> {
  const { root, apiPort, identityProviderPort, dataDir } = place;
  const [apiTaken, identityProviderTaken, holder] = await Promise.all([
    portTaken(apiPort),
    identityProviderPort !== undefined && portTaken(identityProviderPort),
    dataFolderHolder(dataDir),
  ]);
  const taken = [
    apiTaken && `port ${apiPort}, the API's (${place.apiPortFrom === 'PORT' ? 'PORT' : 'Host.LocalHttpPort of local.settings.json, which PORT overrides'})`,
    identityProviderTaken && `port ${identityProviderPort}, the local identity provider's (LOCAL_IDP_PORT)`,
    holder !== undefined && `the data folder ${shown(root, dataDir)} (LOCAL_DATA_DIR), by the stack of process ${holder}`,
  ].filter(Boolean);
  if (!taken.length) return;

  const ports = new Set([apiPort, identityProviderPort ?? 0]);
  const api = apiTaken ? await freePortNear(apiPort, ports) : apiPort;
  ports.add(api);
  const settings = [`PORT=${api}`];
  if (identityProviderPort !== undefined)
    settings.push(`LOCAL_IDP_PORT=${identityProviderTaken ? await freePortNear(identityProviderPort, ports) : identityProviderPort}`);
  settings.push(`LOCAL_DATA_DIR=${holder === undefined ? shellQuoted(shown(root, dataDir)) : `.local-${api || 2}`}`);
  throw new StartError(
    `In use already (another \`npm start\`?): ${taken.join('; ')}.\n` +
      `A second stack needs ports and a data folder of its own. These are free now:\n  ${settings.join(' ')} npm start\n` +
      '(and export them in each terminal you use with it: the token command, webhooks:listen and the recipes read them)',
  );
}

/** The data folder as LOCAL_DATA_DIR would give it: relative to the project when it is inside it. */
function shown(root: string, dataDir: string): string {
  const inside = relative(root, dataDir);
  return inside && !inside.startsWith('..') && !isAbsolute(inside) ? inside : dataDir;
}

/** A value as a POSIX shell reads it back unchanged: as it is when it holds nothing the shell reads otherwise, else in single quotes. */
export const shellQuoted = (value: string): string => (/^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`);

/** Ends `npm start` with the message a StartError says; anything else is a bug, and keeps its stack. */
export function stopOnStartError(error: unknown): never {
  if (!(error instanceof StartError)) throw error;
  console.error(error.message);
  process.exit(1);
}
