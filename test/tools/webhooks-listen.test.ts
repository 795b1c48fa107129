/**
 * `npm run webhooks:listen` meeting a port that is taken, an API that is not there, or no token: one line
 * saying what to change, exit code 1, no stack trace, and no subscription left behind.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort as findClosedPort, heldPort, runCommand } from '../support/commands.js';
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

  it('on a port that is taken says so in one line naming --port, and subscribes nothing', async () => {
    const admin = await token({ roles: ['LMS.Admin'] });
    const listened = await run(process.execPath, ['dist/tools/webhooks-listen.js', '--port', String(busyPort), '--api', stack.apiBaseUrl], { TOKEN: admin });
    expect(listened.code).toBe(1);
    expect(listened.stderr).toBe(`Port ${busyPort} is in use: choose another with --port, e.g. npm run -s webhooks:listen -- --port ${busyPort + 10}\n`);
    expect(await ownSubscriptions(busyPort)).toEqual([]);
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
