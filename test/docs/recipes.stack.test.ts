/**
 * Every bash block of README.md and docs/, run as written and in order, as a newcomer runs them:
 * against a stack of the test's own, started as `npm start` starts it, from shells that have only the
 * settings a user who moved the ports exports in each terminal, as the README says: PORT,
 * LOCAL_IDP_PORT, LOCAL_DATA_DIR, WEBHOOKS_LISTEN_PORT and SAMPLE_PORT (free ports and a temporary
 * folder: this machine's 7071 to 7073 may be other developers'). No block is changed, so a block that
 * names one of those ports outside a comment would call another stack: that fails the test.
 *
 * What is not run as written, and why:
 * - A block for Azure, for a tool this machine does not have, or one that changes the checkout
 *   (NOT_HERE below, each with its reason). Every other block is run.
 * - README's first block, `npm install && npm start` and `npm test`. This checkout is installed
 *   already (a fresh clone's install is tried by hand); `npm test` is this run. `npm start`, there
 *   and in any later block, is started as `node dist/local/start.js`, which is what it runs once
 *   dist/ is built: `npm test` has just built, and no test may build dist/ under the hosts of the
 *   others. A later block that starts the API with settings of its own (AUTH_AUDIENCES, say) first
 *   stops the running one with Ctrl+C, as its reader would.
 * - A command that runs until Ctrl+C (`npm start`, `npm run -s webhooks:listen`, `npm run sample`)
 *   runs in a terminal of its own, alone in its block: in the background, waited for until it says
 *   it is ready. At the end of each document, what it left running is checked (a listener printed,
 *   verified, an event of each project that the document's later blocks created or changed) and
 *   stopped with SIGINT to its process group, as Ctrl+C stops it.
 *
 * Every other block runs in a bash session with `set -euo pipefail`, so that a command that fails
 * or a variable that is not set (a block that needs what another terminal defined) fails the test.
 * A block whose lead-in says "another terminal" starts a new session, with nothing defined; the
 * others go on in the current one. Every HTTP status a block prints must be a success.
 *
 * Before the documents, the commands `npm start` printed run as printed, in a terminal that has none
 * of the stack's settings: a user copies them from its output into a new terminal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const appRoot = fileURLToPath(new URL('../../', import.meta.url));
const DOCUMENTS = ['README.md', ...(await readdir(join(appRoot, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
const BLOCK_DEADLINE_MS = 60_000;
// The ports of `npm start`, its identity provider and the webhook listener when nothing moves them.
const DEFAULT_PORTS = /\b707[123]\b/;

/** Blocks that cannot run here, and why. */
const NOT_HERE: [RegExp, string][] = [
  [/(^|[\s(])azd? |azurewebsites\.net/m, 'Azure: commands against a subscription, or calls to a deployed app'],
  [/^\s*(kiota|dotnet) /m, 'the C# client generated with tools from NuGet, which this test does not install'],
  [/^\s*npm (version|ci)\b/m, "changes the checkout: a release's version bump, a deployment's clean install"],
];

/** The last line of npm start's banner: every line before it (the token command among them) has been printed. */
const STACK_READY = /^Press Ctrl\+C to stop\./m;

/** Commands that run until Ctrl+C, and what each prints once it is ready. */
const LONG_RUNNING: [RegExp, RegExp][] = [
  [/^(\w+=\S+\s+)*npm start\b/, STACK_READY],
  [/^npm run -s webhooks:listen\b/, /^Subscribed WHK-\d+/m],
  [/^npm run (-s )?sample\b/, /^Press Ctrl\+C to stop\./m],
];

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

/** A block's commands: its lines without comments or blank ones. */
const commandsOf = (code: string) =>
  code
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*/, '').trim())
    .filter(Boolean);

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
  async run(name: string, code: string): Promise<string> {
    const file = join(this.scripts, `${name.replace(/\W/g, '-')}.sh`);
    await writeFile(file, code);
    const marker = `--- block done ${randomUUID()} ---`;
    const from = this.output.length;
    // Sourced, so that its variables stay; from /dev/null, so that no command of it reads the session's next lines.
    this.child.stdin!.write(`source ${file} < /dev/null\necho '${marker}'\n`);
    await until(
      name,
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
let dataDir: string;
let scripts: string;
/** What a user who moved everything exports in each terminal; nothing else of the test's environment. */
let environment: Record<string, string>;
let stack: Terminal;

/** `npm start` with a line's own settings (none for README's first block), as it runs after its build. */
async function startApi(line = 'npm start'): Promise<Terminal> {
  const terminal = new Terminal('bash', ['--noprofile', '--norc', '-c', line.replace(/\bnpm start\b/, 'exec node dist/local/start.js')], environment);
  started.push(terminal);
  await terminal.waitFor(STACK_READY, line);
  return terminal;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'lms-recipes-'));
  scripts = join(dataDir, 'blocks');
  await mkdir(scripts);
  environment = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PORT: String(await freePort()),
    LOCAL_IDP_PORT: String(await freePort()),
    LOCAL_DATA_DIR: join(dataDir, 'local'),
    WEBHOOKS_LISTEN_PORT: String(await freePort()),
    SAMPLE_PORT: String(await freePort()),
  };
  stack = await startApi();
}, BLOCK_DEADLINE_MS);

afterAll(async () => {
  // Listeners first: they unsubscribe through the API.
  for (const terminal of started.reverse()) await terminal.interrupt();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('what npm start prints', () => {
  it('is commands that work as printed, in a terminal without the settings the stack was started with', async () => {
    const banner = stack.output;
    const api = /^The API is at (\S+)$/m.exec(banner)?.[1];
    const getToken = /^Get a token:\s+(.+)$/m.exec(banner)?.[1];
    expect(api).toBe(`http://localhost:${environment.PORT}/api`);
    expect(getToken).toMatch(/^TOKEN=\$\(.*npm run -s token\b/);
    const bare = new Session({ PATH: environment.PATH!, HOME: environment.HOME! }, scripts);
    started.push(bare);
    const printed = await bare.run('banner', `${getToken}\ncurl -s -o /dev/null -w '%{http_code}\\n' ${api}/users/me -H "Authorization: Bearer $TOKEN"\n`);
    expect(printed.trim()).toBe('200');
    await bare.close();
  });
});

describe('the recipes of README.md and docs/', () => {
  it('run as written, in order, against a fresh stack', { timeout: 300_000 }, async () => {
    const blocks = (await Promise.all(DOCUMENTS.map(bashBlocks))).flat();
    const [first, ...rest] = blocks;
    expect(first!.file).toBe('README.md');
    expect(commandsOf(first!.code), "README's first block, handled as the header says").toEqual(['npm install && npm start', 'npm test']);

    const ran: string[] = [];
    let session: Session | undefined;
    /** What the current document left running, and the projects its later blocks made. */
    let running: { terminal: Terminal; listener: boolean; projectsAfter: string[] }[] = [];
    const endDocument = async () => {
      await session?.close();
      expect(session?.exitCode ?? 0).toBe(0);
      session = undefined;
      for (const { terminal, listener, projectsAfter } of running) {
        if (listener) {
          expect(projectsAfter.length, 'a listener, then changes it should hear of').toBeGreaterThan(0);
          for (const id of new Set(projectsAfter)) {
            await terminal.waitFor(new RegExp(`✓ project\\.\\w+ ${id} .*signature verified`), `the listener, an event of ${id}`);
          }
        }
        await terminal.interrupt();
        if (listener) expect(terminal.output).toMatch(/^Unsubscribed WHK-\d+\.$/m);
      }
      running = [];
    };

    for (const block of rest) {
      const name = `${block.file}, block ${block.index + 1}`;
      if (block.file !== rest[rest.indexOf(block) - 1]?.file) await endDocument();
      if (NOT_HERE.some(([pattern]) => pattern.test(block.code))) continue;
      ran.push(name);
      const commands = commandsOf(block.code);
      // A default after the setting, as in ${PORT:-7071}, is what the recipes should say.
      const withoutDefaults = commands.join('\n').replace(/\$\{\w+:-[^}]*\}/g, '');
      expect(withoutDefaults, `${name}: a port that only the settings may name`).not.toMatch(DEFAULT_PORTS);
      const longRunning = LONG_RUNNING.find(([command]) => commands.some((line) => command.test(line)));
      if (longRunning) {
        expect(commands, `${name}: what follows a command that runs until Ctrl+C never runs`).toHaveLength(1);
        if (/\bnpm start\b/.test(commands[0]!)) {
          await stack.interrupt();
          stack = await startApi(commands[0]);
          continue;
        }
        const terminal = new Terminal('bash', ['--noprofile', '--norc', '-c', block.code], environment);
        started.push(terminal);
        await terminal.waitFor(longRunning[1], name);
        running.push({ terminal, listener: /webhooks:listen/.test(commands[0]!), projectsAfter: [] });
        continue;
      }
      const lastParagraph =
        block.leadIn
          .trim()
          .split(/\n\s*\n/)
          .at(-1) ?? '';
      if (!session || /another terminal/i.test(lastParagraph)) {
        await session?.close();
        session = new Session(environment, scripts);
        started.push(session);
      }
      const printed = await session.run(name, block.code);
      // Not only at the start of a line: curl -i prints a status line right after the previous answer's body.
      const statuses = [...printed.matchAll(/HTTP\/[\d.]+ (\d{3}) /g)].map((match) => Number(match[1]));
      expect(
        statuses.filter((status) => status >= 400),
        `${name}:\n${printed}`,
      ).toEqual([]);
      expect(statuses.length, `${name}: an answer for each curl -i`).toBe((block.code.match(/curl -s?i\b/g) ?? []).length);
      for (const [, id] of printed.matchAll(/\{"id":"(PRJ-\d+)"/g)) for (const { projectsAfter } of running) projectsAfter.push(id!);
    }
    await endDocument();

    // The documents with recipes of the local stack, each run.
    for (const file of ['README.md', 'docs/webhooks.md', 'docs/add-ins.md'])
      expect(
        ran.some((name) => name.startsWith(`${file},`)),
        file,
      ).toBe(true);
    // The Ctrl+C of the last start: it stops without an error.
    await stack.interrupt();
    expect(stack.exitCode).toBe(0);
  });
});
