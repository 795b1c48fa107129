/**
 * A port that is taken, and an API that is not there, as `npm start` and `npm run webhooks:listen`
 * meet them: one line naming what to change, exit code 1, no stack trace, and nothing left behind
 * (no subscription, no rebuild of dist/ under a running stack).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, stack, token } from '../../test/support/stack.js';

const appRoot = fileURLToPath(new URL('../../', import.meta.url));
let held: Server;
let busyPort: number;
/** A port nothing listens on. */
let closedPort: number;
let dataDir: string;

beforeAll(async () => {
  held = createServer();
  await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
  busyPort = (held.address() as { port: number }).port;
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  closedPort = (closed.address() as { port: number }).port;
  await new Promise((resolve) => closed.close(resolve));
  dataDir = await mkdtemp(join(tmpdir(), 'lms-busy-ports-'));
});
afterAll(async () => {
  await new Promise((resolve) => held.close(resolve));
  await rm(dataDir, { recursive: true, force: true });
});

/**
 * Runs a command as a user's shell would, with only these settings: its exit code and output. In a
 * process group of its own, all of which is killed if it outlives the deadline (a stack that started
 * after all), so that a broken guarantee leaves nothing running.
 */
function run(file: string, args: string[], settings: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(file, args, {
    cwd: appRoot,
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOCAL_DATA_DIR: dataDir, ...settings },
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output.stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output.stderr += chunk));
  const deadline = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(deadline);
      resolve({ code, ...output });
    }),
  );
}

/** What npm itself may say on stderr whatever runs (a warning about the user's npm config). */
const withoutNpmWarnings = (stderr: string) =>
  stderr
    .split('\n')
    .filter((line) => line && !line.startsWith('npm warn'))
    .join('\n');

describe('npm start on a port that is taken', () => {
  it("says in one line that the API's port is in use and to set PORT", async () => {
    const started = await run(process.execPath, ['dist/local/start.js'], { PORT: String(busyPort), LOCAL_IDP_PORT: '0' });
    expect(started.code).toBe(1);
    expect(started.stderr).toBe(
      `Port ${busyPort}, the API's, is in use (another \`npm start\`?): set PORT to a free port, e.g. PORT=${busyPort + 10} npm start\n`,
    );
  });

  it("says in one line that the identity provider's port is in use and to set LOCAL_IDP_PORT", async () => {
    const started = await run(process.execPath, ['dist/local/start.js'], { PORT: '0', LOCAL_IDP_PORT: String(busyPort) });
    expect(started.code).toBe(1);
    expect(started.stderr).toMatch(new RegExp(`^Port ${busyPort}, the local identity provider's, is in use .*set LOCAL_IDP_PORT to a free port.*\\n$`));
  });

  it('stops before it builds, so that dist/ is not rebuilt under the stack already running', async () => {
    const builtAt = (await stat(join(appRoot, 'dist', 'local', 'start.js'))).mtimeMs;
    const started = await run('npm', ['start'], { PORT: String(busyPort), LOCAL_IDP_PORT: '0' });
    expect(started.code).toBe(1);
    expect(withoutNpmWarnings(started.stderr)).toBe(
      `Port ${busyPort}, the API's, is in use (another \`npm start\`?): set PORT to a free port, e.g. PORT=${busyPort + 10} npm start`,
    );
    expect(started.stdout).not.toContain('tsc');
    expect((await stat(join(appRoot, 'dist', 'local', 'start.js'))).mtimeMs).toBe(builtAt);
  });

  it('says in one line that PORT is not a port', async () => {
    const started = await run(process.execPath, ['dist/local/start.js'], { PORT: 'seventy' });
    expect([started.code, started.stderr]).toEqual([1, 'PORT must be a port number (0 to 65535), not "seventy".\n']);
  });
});

describe('npm run webhooks:listen', () => {
  const ownSubscriptions = async (port: number) => {
    const listed = await api('GET', '/webhooks?limit=200', { token: await token({ roles: ['LMS.Admin'] }) });
    return (listed.body as { url: string }[]).filter((subscription) => subscription.url === `http://127.0.0.1:${port}/hook`);
  };

  it('on a port that is taken says so in one line naming --port, and subscribes nothing', async () => {
    const admin = await token({ roles: ['LMS.Admin'] });
    const listened = await run(process.execPath, ['dist/local/webhooks-listen.js', '--port', String(busyPort), '--api', stack.apiBaseUrl], { TOKEN: admin });
    expect(listened.code).toBe(1);
    expect(listened.stderr).toBe(`Port ${busyPort} is in use: choose another with --port, e.g. npm run -s webhooks:listen -- --port ${busyPort + 10}\n`);
    expect(await ownSubscriptions(busyPort)).toEqual([]);
  });

  it('with the API not there says so in one line, without a stack', async () => {
    const listened = await run(process.execPath, ['dist/local/webhooks-listen.js', '--port', '0', '--api', `http://127.0.0.1:${closedPort}/api`], {
      TOKEN: 'any',
    });
    expect(listened.code).toBe(1);
    expect(listened.stderr).toBe(
      `Cannot reach the API at http://127.0.0.1:${closedPort}/api (ECONNREFUSED): is \`npm start\` running? PORT or --api say where it listens.\n`,
    );
  });

  it('without a token or a local identity provider says how to get one', async () => {
    const listened = await run(process.execPath, ['dist/local/webhooks-listen.js', '--port', '0'], {});
    expect(listened.code).toBe(1);
    expect(listened.stderr).toMatch(/^No local identity provider found .*: start the API with `npm start` first\. Or export TOKEN, .*\n$/);
  });
});
