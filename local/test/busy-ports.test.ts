/**
 * A port that is taken, as `npm start` meets it: one line naming the setting to change, exit code 1, no
 * stack trace, and no rebuild of dist/ under a running stack.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appRoot, heldPort, runCommand } from '../../test/support/commands.js';

let held: Awaited<ReturnType<typeof heldPort>>;
let busyPort: number;
let dataDir: string;

beforeAll(async () => {
  held = await heldPort();
  busyPort = held.port;
  dataDir = await mkdtemp(join(tmpdir(), 'lms-busy-ports-'));
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
