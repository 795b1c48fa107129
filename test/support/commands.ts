/** Running the project's commands as a user's shell would, and the ports they meet: one taken, one nothing listens on. */
import { execFile, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const appRoot = fileURLToPath(new URL('../../', import.meta.url));

const run = promisify(execFile);

/** Runs a command to its end, whatever its exit code, with the environment given: the tests show its output when it fails. */
export async function outcome(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  try {
    const { stdout, stderr } = await run(command, args, { ...options, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string; message?: string };
    return { code: failed.code ?? 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}${failed.message ?? ''}` };
  }
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command from the project's folder with only these settings: its exit code and output. In a
 * process group of its own, all of which is killed if it outlives the deadline (a stack that started
 * after all), so that a broken guarantee leaves nothing running.
 */
export function runCommand(file: string, args: string[], settings: Record<string, string>): Promise<CommandResult> {
  const child = spawn(file, args, {
    cwd: appRoot,
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...settings },
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

/** A port held by a server of this process until `release`. */
export async function heldPort(): Promise<{ port: number; release(): Promise<void> }> {
  // Below Linux's ephemeral range (32768 and up), as a user's ports are: a port `npm start` suggests near it is
  // then never taken meanwhile by an outgoing connection of another test's.
  for (;;) {
    const server: Server = createServer();
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const listening = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (listening) return { port, release: () => new Promise((resolve) => server.close(() => resolve())) };
  }
}

/** A port nothing listens on (one just released). */
export async function closedPort(): Promise<number> {
  const held = await heldPort();
  await held.release();
  return held.port;
}
