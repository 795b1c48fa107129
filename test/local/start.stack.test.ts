/**
 * `npm start` beside another stack, or a program on one of its ports: one message, before anything is built,
 * naming every setting that gives a second stack its own (PORT, LOCAL_IDP_PORT, LOCAL_DATA_DIR) with values free
 * now; the command it prints starts that stack as printed, and without a build when nothing has changed.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appRoot, heldPort, runCommand } from '../support/commands.js';
import { waitFor } from '../support/wait.js';
import { distIsCurrent } from '../../tools/built-from.js';

let held: Awaited<ReturnType<typeof heldPort>>;
let busyPort: number;
let dataDir: string;

beforeAll(async () => {
  held = await heldPort();
  busyPort = held.port;
  dataDir = await mkdtemp(join(tmpdir(), 'lms-second-stack-'));
});
afterAll(async () => {
  await held.release();
  await rm(dataDir, { recursive: true, force: true });
});

/** A command of `npm start`'s, its data in a folder of this file's. */
const run = (file: string, args: string[], settings: Record<string, string>) => runCommand(file, args, { LOCAL_DATA_DIR: dataDir, ...settings });

/** What npm itself may say on stderr whatever runs (a warning about the user's npm config). */
const withoutNpmWarnings = (stderr: string) =>
  stderr
    .split('\n')
    .filter((line) => line && !line.startsWith('npm warn'))
    .join('\n');

/** The message, its first line naming what is taken; the command it prints, with the free ports it found. */
function secondStackMessage(stderr: string, taken: string) {
  const [first, second, command, last, ...more] = withoutNpmWarnings(stderr).split('\n');
  expect(first).toBe(`In use already (another \`npm start\`?): ${taken}.`);
  expect(second).toBe('A second stack needs ports and a data folder of its own. These are free now:');
  expect(last).toMatch(/^\(and export them in each terminal you use with it/);
  expect(more).toEqual([]);
  const settings = /^ {2}PORT=(\d+) LOCAL_IDP_PORT=(\d+) LOCAL_DATA_DIR=(\S+) npm start$/.exec(command!);
  expect(settings, command).not.toBeNull();
  return { command: command!.trim(), port: Number(settings![1]), identityProviderPort: Number(settings![2]), dataDir: settings![3]! };
}

describe('npm start beside another stack', () => {
  it("names every setting a second stack needs when the API's port is taken, with free ports", async () => {
    const started = await run(process.execPath, ['dist/local/start.js'], { PORT: String(busyPort), LOCAL_IDP_PORT: '0' });
    expect(started.code).toBe(1);
    const message = secondStackMessage(started.stderr, `port ${busyPort}, the API's (PORT)`);
    expect(message.port).not.toBe(busyPort);
    expect(message).toMatchObject({ identityProviderPort: 0, dataDir });
  });

  it("names them all as well when only the identity provider's port is taken", async () => {
    const started = await run(process.execPath, ['dist/local/start.js'], { PORT: '0', LOCAL_IDP_PORT: String(busyPort) });
    expect(started.code).toBe(1);
    const message = secondStackMessage(started.stderr, `port ${busyPort}, the local identity provider's (LOCAL_IDP_PORT)`);
    expect(message).toMatchObject({ port: 0, dataDir });
    expect(message.identityProviderPort).not.toBe(busyPort);
  });

  it("names them all when the data folder is another running stack's, and offers a folder of its own", async () => {
    const folder = join(dataDir, 'taken');
    await mkdir(folder);
    // This process stands for the stack that uses the folder: it is running.
    await writeFile(join(folder, 'stack.json'), JSON.stringify({ pid: process.pid }));
    const started = await run(process.execPath, ['dist/local/start.js'], { PORT: '0', LOCAL_IDP_PORT: '0', LOCAL_DATA_DIR: folder });
    expect(started.code).toBe(1);
    const message = secondStackMessage(started.stderr, `the data folder ${folder} (LOCAL_DATA_DIR), by the stack of process ${process.pid}`);
    expect(message).toMatchObject({ port: 0, identityProviderPort: 0, dataDir: '.local-2' });
  });

  it("says so before it builds, when the API port is taken or the identity provider's, and dist/ stays as it was", async () => {
    // A dist/ that is not what the sources build would be built by `npm start`, under the stacks of the other tests.
    expect(await distIsCurrent(appRoot), 'dist/ is what `npm run build` makes of these sources').toBe(true);
    const builtAt = (await stat(join(appRoot, 'dist', 'local', 'start.js'))).mtimeMs;
    for (const settings of [
      { PORT: String(busyPort), LOCAL_IDP_PORT: '0' },
      { PORT: '0', LOCAL_IDP_PORT: String(busyPort) },
    ]) {
      const started = await run('npm', ['start'], settings);
      expect(started.code).toBe(1);
      expect(withoutNpmWarnings(started.stderr)).toMatch(/^In use already/);
      expect(started.stdout).not.toMatch(/> (build|compile)/);
    }
    expect((await stat(join(appRoot, 'dist', 'local', 'start.js'))).mtimeMs).toBe(builtAt);
  });

  it('starts the second stack with the command it printed, as printed, without a build', { timeout: 90_000 }, async () => {
    expect(await distIsCurrent(appRoot), 'dist/ is what `npm run build` makes of these sources').toBe(true);
    const refused = await run(process.execPath, ['dist/local/start.js'], { PORT: String(busyPort), LOCAL_IDP_PORT: '0' });
    const { command } = secondStackMessage(refused.stderr, `port ${busyPort}, the API's (PORT)`);
    const builtAt = (await stat(join(appRoot, 'dist', 'local', 'start.js'))).mtimeMs;
    // A new terminal: nothing of the refused start's settings but what the command says.
    const second = spawn('bash', ['--noprofile', '--norc', '-c', command], {
      cwd: appRoot,
      detached: true,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    });
    let output = '';
    for (const stream of [second.stdout, second.stderr]) stream.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const closed = new Promise((resolve) => second.on('close', resolve));
    try {
      await waitFor(() => output.includes('The API is at '), 60_000).catch((error: Error) => {
        throw new Error(`${error.message}; the second stack said:\n${output}`);
      });
    } finally {
      // Ctrl+C, to the whole of it (npm, its shell, the stack), unless it has ended already.
      if (second.exitCode === null && second.signalCode === null) process.kill(-second.pid!, 'SIGINT');
      await closed;
    }
    expect(output).toContain('dist/ is built from these sources: no build.');
    expect(output).not.toMatch(/> (build|compile)/);
    expect((await stat(join(appRoot, 'dist', 'local', 'start.js'))).mtimeMs).toBe(builtAt);
  });

  it('says in one line that PORT is not a port', async () => {
    const started = await run(process.execPath, ['dist/local/start.js'], { PORT: 'seventy' });
    expect([started.code, started.stderr]).toEqual([1, 'PORT must be a port number (0 to 65535), not "seventy".\n']);
  });
});
