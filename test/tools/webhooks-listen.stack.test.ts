/**
 * `npm run webhooks:listen` meeting a port that is taken, an API that is not there, or no token: one line
 * saying what to change, exit code 1, no stack trace, and no subscription left behind; and its help.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort as findClosedPort, heldPort, runCommand } from '../support/commands.js';
import { SETTINGS } from '../../shared/settings/catalog.js';
import { api, stack, token } from '../support/stack.js';

let held: Awaited<ReturnType<typeof heldPort>>;
let busyPort: number;
let closedPort: number;
let dataDir: string;

beforeAll(async () => {
  held = await heldPort();
  busyPort = held.port;
  closedPort = await findClosedPort();
  // Its own local data folder: no identity provider of `npm start` to be found there.
  dataDir = await mkdtemp(join(tmpdir(), 'lms-webhooks-listen-'));
});
afterAll(async () => {
  await held.release();
  await rm(dataDir, { recursive: true, force: true });
});

const run = (file: string, args: string[], settings: Record<string, string>) => runCommand(file, args, { LOCAL_DATA_DIR: dataDir, ...settings });

describe('npm run webhooks:listen', () => {
  const ownSubscriptions = async (port: number) => {
    const listed = await api('GET', '/webhooks?limit=200', { token: await token({ roles: ['LMS.Admin'] }) });
    return (listed.body as { url: string }[]).filter((subscription) => subscription.url === `http://127.0.0.1:${port}/hook`);
  };

  it('on a port that is taken says so in one line naming WEBHOOKS_LISTEN_PORT and --port, and subscribes nothing', async () => {
    const admin = await token({ roles: ['LMS.Admin'] });
    const taken =
      `Port ${busyPort}, the receiver's, is in use (another webhooks:listen?): set WEBHOOKS_LISTEN_PORT (or --port) to a free port, ` +
      `e.g. WEBHOOKS_LISTEN_PORT=${busyPort + 10} npm run -s webhooks:listen\n`;
    const byFlag = await run(process.execPath, ['dist/tools/webhooks-listen.js', '--port', String(busyPort), '--api', stack.apiBaseUrl], { TOKEN: admin });
    expect([byFlag.code, byFlag.stderr]).toEqual([1, taken]);
    const bySetting = await run(process.execPath, ['dist/tools/webhooks-listen.js', '--api', stack.apiBaseUrl], {
      TOKEN: admin,
      WEBHOOKS_LISTEN_PORT: String(busyPort),
    });
    expect([bySetting.code, bySetting.stderr]).toEqual([1, taken]);
    expect(await ownSubscriptions(busyPort)).toEqual([]);
  });

  it('prints its help: the port it listens on by default and the settings it reads', async () => {
    const helped = await run(process.execPath, ['dist/tools/webhooks-listen.js', '--help'], {});
    expect([helped.code, helped.stderr]).toEqual([0, '']);
    expect(helped.stdout).toMatch(/^Usage: npm run -s webhooks:listen/);
    expect(helped.stdout).toContain(`--port <port>   The receiver's port (default: WEBHOOKS_LISTEN_PORT, or ${SETTINGS.WEBHOOKS_LISTEN_PORT.default})`);
    for (const setting of ['PORT', 'WEBHOOKS_LISTEN_PORT', 'TOKEN', 'LOCAL_DATA_DIR']) expect(helped.stdout).toContain(setting);
  });

  it('refuses an option it does not know, and a port that is not one, pointing at --help', async () => {
    const unknown = await run(process.execPath, ['dist/tools/webhooks-listen.js', '--prot', '7083'], {});
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^Unknown option '--prot'.*\nRun with --help for the options\.\n$/);
    const notAPort = await run(process.execPath, ['dist/tools/webhooks-listen.js'], { WEBHOOKS_LISTEN_PORT: 'seventy' });
    expect([notAPort.code, notAPort.stderr]).toEqual([1, 'WEBHOOKS_LISTEN_PORT must be a port number (0 to 65535), not "seventy".\n']);
  });

  it('with the API not there says so in one line, without a stack', async () => {
    const listened = await run(process.execPath, ['dist/tools/webhooks-listen.js', '--port', '0', '--api', `http://127.0.0.1:${closedPort}/api`], {
      TOKEN: 'any',
    });
    expect(listened.code).toBe(1);
    expect(listened.stderr).toBe(
      `Cannot reach the API at http://127.0.0.1:${closedPort}/api (ECONNREFUSED): is \`npm start\` running? PORT or --api say where it listens.\n`,
    );
  });

  it('without a token or a local identity provider says how to get one', async () => {
    const listened = await run(process.execPath, ['dist/tools/webhooks-listen.js', '--port', '0'], {});
    expect(listened.code).toBe(1);
    expect(listened.stderr).toMatch(/^No local identity provider found .*: run `npm start` first, with the same LOCAL_DATA_DIR\. Or export TOKEN, .*\n$/);
  });
});
