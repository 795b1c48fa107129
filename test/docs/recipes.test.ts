/**
 * Every bash block of README.md and docs/webhooks.md, run as written and in order, as a newcomer runs
 * them: against a stack of the test's own, started as `npm start` starts it, from shells that know
 * only where that stack is. What cannot run as written, and why:
 *
 * - README's first block, `npm install && npm start` and `npm test`. This checkout is installed
 *   already (a fresh clone's install is tried by hand); `npm start` is started as `node
 *   dist/local/start.js`, which is what it runs after its build: `npm test` has just built, and a
 *   second build would replace dist/ under the hosts of the other test files; `npm test` is this run.
 * - A block that runs until Ctrl+C (`npm run -s webhooks:listen`) runs in a terminal of its own: in
 *   the background, waited for until it says it has subscribed, and stopped at the end with SIGINT
 *   to its process group, as Ctrl+C stops it.
 * - Ports: this machine's 7071 to 7073 may belong to other developers. The shells get PORT,
 *   LOCAL_IDP_PORT and LOCAL_DATA_DIR of the test's stack, as a user who moved the ports exports
 *   them; `localhost:7071` in a block is read as the test's API port, and the listener is given
 *   `-- --port <a free port>`. Nothing else of a block is changed.
 *
 * Every other block runs in a bash session with `set -euo pipefail`, so that a command that fails
 * or a variable that is not set (a block that needs what another terminal defined) fails the test.
 * A block whose lead-in says "another terminal" starts a new session, with nothing defined; the
 * others go on in the current one. Every HTTP status a block prints must be a success.
 * About 30 to 40 s on a quiet machine, most of it the stack's start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const appRoot = fileURLToPath(new URL('../../', import.meta.url));
const FILES = ['README.md', 'docs/webhooks.md'];
const BLOCK_DEADLINE_MS = 60_000;

interface Block {
  file: string;
  index: number;
  code: string;
  /** The prose between the previous block and this one. */
  leadIn: string;
}

async function bashBlocks(file: string): Promise<Block[]> {
  const text = await readFile(join(appRoot, file), 'utf8');
  const blocks: Block[] = [];
  const fence = /^```bash\n([\s\S]*?)^```$/gm;
  let previousEnd = 0;
  for (const match of text.matchAll(fence)) {
    blocks.push({ file, index: blocks.length, code: match[1]!, leadIn: text.slice(previousEnd, match.index) });
    previousEnd = match.index + match[0].length;
  }
  return blocks;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Resolves once `done` holds, rejects after the deadline or when `failed` says why. */
async function until(what: string, done: () => boolean, failed: () => string | undefined, timeoutMs = BLOCK_DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    const reason = failed();
    if (reason !== undefined) throw new Error(`${what}: ${reason}`);
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A process with its output kept, in a process group of its own so that SIGINT reaches all of it as Ctrl+C does. */
class Terminal {
  readonly child: ChildProcess;
  output = '';
  exitCode: number | null | undefined;

  constructor(command: string, args: string[], environment: Record<string, string>) {
    this.child = spawn(command, args, { cwd: appRoot, env: environment, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    for (const stream of [this.child.stdout!, this.child.stderr!]) stream.setEncoding('utf8').on('data', (chunk: string) => (this.output += chunk));
    this.child.on('exit', (code) => (this.exitCode = code));
  }

  waitFor(pattern: RegExp, what: string): Promise<void> {
    return until(
      what,
      () => pattern.test(this.output),
      () => (this.exitCode === undefined ? undefined : `exited (${this.exitCode}):\n${this.output}`),
    );
  }

  async interrupt(): Promise<void> {
    if (this.exitCode !== undefined) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    process.kill(-this.child.pid!, 'SIGINT');
    await exited;
  }
}

/** A bash session that runs block after block, keeping its variables, as one terminal does. */
class Session extends Terminal {
  constructor(
    environment: Record<string, string>,
    private readonly scripts: string,
  ) {
    super('bash', ['--noprofile', '--norc'], environment);
    this.child.stdin!.write('set -euo pipefail\n');
  }

  /** Runs a block and answers what it printed; a block that fails ends the session, and the test. */
  async run(block: Block, code: string): Promise<string> {
    const file = join(this.scripts, `${block.file.replace(/\W/g, '-')}-${block.index}.sh`);
    await writeFile(file, code);
    const marker = `--- block done ${randomUUID()} ---`;
    const from = this.output.length;
    // Sourced, so that its variables stay; from /dev/null, so that no command of it reads the session's next lines.
    this.child.stdin!.write(`source ${file} < /dev/null\necho '${marker}'\n`);
    await until(
      `${block.file}, block ${block.index + 1}`,
      () => this.output.includes(marker, from),
      () => (this.exitCode === undefined ? undefined : `failed (exit ${this.exitCode}):\n${this.output.slice(from)}`),
    );
    return this.output.slice(from, this.output.indexOf(marker, from));
  }

  async close(): Promise<void> {
    if (this.exitCode !== undefined) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin!.end();
    await exited;
  }
}

const started: Terminal[] = [];
let dataDir: string | undefined;

afterAll(async () => {
  // Listeners first: they unsubscribe through the API.
  for (const terminal of started.reverse()) await terminal.interrupt();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('the recipes of README.md and docs/webhooks.md', () => {
  it('run as written, in order, against a fresh stack', { timeout: 240_000 }, async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'lms-recipes-'));
    const scripts = join(dataDir, 'blocks');
    await mkdir(scripts);
    const [apiPort, identityProviderPort] = [await freePort(), await freePort()];
    const environment = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(apiPort),
      LOCAL_IDP_PORT: String(identityProviderPort),
      LOCAL_DATA_DIR: join(dataDir, 'local'),
    };
    const withPorts = async (code: string) =>
      code
        .replaceAll('localhost:7071', `localhost:${apiPort}`)
        .replace(/npm run -s webhooks:listen(?=\s|$)/g, `npm run -s webhooks:listen -- --port ${await freePort()}`);

    const blocks = (await Promise.all(FILES.map(bashBlocks))).flat();
    expect(blocks.map((block) => block.file)).toEqual(expect.arrayContaining(FILES));

    const [first, ...rest] = blocks;
    const commands = first!.code
      .split('\n')
      .map((line) => line.replace(/#.*/, '').trim())
      .filter(Boolean);
    expect(commands, "README's first block, handled as the header says").toEqual(['npm install && npm start', 'npm test']);
    const stack = new Terminal(process.execPath, ['dist/local/start.js'], environment);
    started.push(stack);
    await stack.waitFor(/The API is at /, 'npm start');

    const listeners: { terminal: Terminal; projectsAfter: string[] }[] = [];
    let session: Session | undefined;
    let file = '';
    for (const block of rest) {
      const code = await withPorts(block.code);
      expect(code, `${block.file}, block ${block.index + 1}: a port the test does not move`).not.toMatch(/\b707[12]\b/);
      if (/webhooks:listen/.test(code)) {
        const lines = code.split('\n').filter((line) => line.replace(/#.*/, '').trim());
        expect(lines, `${block.file}, block ${block.index + 1}: what follows a command that runs until Ctrl+C never runs`).toHaveLength(1);
        const listener = new Terminal('bash', ['--noprofile', '--norc', '-c', code], environment);
        started.push(listener);
        await listener.waitFor(/^Subscribed WHK-\d+/m, `${block.file}, block ${block.index + 1} (the listener)`);
        listeners.push({ terminal: listener, projectsAfter: [] });
        continue;
      }
      const lastParagraph =
        block.leadIn
          .trim()
          .split(/\n\s*\n/)
          .at(-1) ?? '';
      if (!session || block.file !== file || /another terminal/i.test(lastParagraph)) {
        await session?.close();
        session = new Session(environment, scripts);
        started.push(session);
      }
      file = block.file;
      const printed = await session.run(block, code);
      // Not only at the start of a line: curl -i prints a status line right after the previous answer's body.
      const statuses = [...printed.matchAll(/HTTP\/[\d.]+ (\d{3}) /g)].map((match) => Number(match[1]));
      expect(
        statuses.filter((status) => status >= 400),
        `${block.file}, block ${block.index + 1}:\n${printed}`,
      ).toEqual([]);
      expect(statuses.length, `${block.file}, block ${block.index + 1}: an answer for each curl -i`).toBe((code.match(/curl -s?i\b/g) ?? []).length);
      for (const [, id] of printed.matchAll(/\{"id":"(PRJ-\d+)"/g)) for (const listener of listeners) listener.projectsAfter.push(id!);
    }
    await session?.close();
    expect(session?.exitCode).toBe(0);

    // Each listener printed, verified, an event of every project a later block created or changed.
    expect(listeners).toHaveLength(FILES.length);
    for (const { terminal, projectsAfter } of listeners) {
      expect(projectsAfter.length).toBeGreaterThan(0);
      for (const id of new Set(projectsAfter)) {
        await terminal.waitFor(new RegExp(`✓ project\\.\\w+ ${id} .*signature verified`), `the listener, an event of ${id}`);
      }
      await terminal.interrupt();
      expect(terminal.output).toMatch(/^Unsubscribed WHK-\d+\.$/m);
    }
  });
});
