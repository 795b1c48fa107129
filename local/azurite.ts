/**
 * The embedded storage queue: Azurite's queue service, so the app and the local host use the real
 * @azure/storage-queue client against it. It runs as a child process rather than in this one because
 * Azurite loads Application Insights, which patches console, winston and the Azure SDK on load.
 */
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// Azurite's well-known development account, the one every storage tool knows (it is public, not a secret).
const AZURITE_ACCOUNT_NAME = 'devstoreaccount1';
const AZURITE_ACCOUNT_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5_000;
// The line Azurite prints once it listens; with port 0 it is the only place the real port appears.
const LISTENING = /successfully listens on (http:\/\/\S+)/;
// Azurite does not notice that its parent is gone; this makes a closed IPC channel a normal shutdown (SIGTERM).
const EXIT_WITH_PARENT = 'data:text/javascript,process.once("disconnect",()=>process.kill(process.pid,"SIGTERM"))';

export interface AzuriteQueueOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Where Azurite keeps its queues between runs; without it they live in memory only. */
  dataDir?: string;
}

export interface AzuriteQueue {
  connectionString: string;
  /** `http://127.0.0.1:<port>/devstoreaccount1` */
  queueEndpoint: string;
  close(): Promise<void>;
}

export async function startAzuriteQueue(options: AzuriteQueueOptions = {}): Promise<AzuriteQueue> {
  const script = join(createRequire(import.meta.url).resolve('azurite/package.json'), '..', 'dist', 'src', 'queue', 'main.js');
  const args = [
    '--queueHost',
    HOST,
    '--queuePort',
    String(options.port ?? 0),
    // Azurite sends usage data to Microsoft unless told not to.
    '--disableTelemetry',
    // The storage SDK may speak a newer service version than this Azurite release knows.
    '--skipApiVersionCheck',
    // No access log line per request.
    '--silent',
    ...(options.dataDir ? ['--location', options.dataDir] : ['--inMemoryPersistence']),
  ];
  // AZURITE_ACCOUNTS in the developer's shell would replace the well-known account this module connects with.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AZURITE_')));
  // Azurite's errors go to this console; its stdout is read only for the line that says it listens.
  const child = fork(script, args, { env, execArgv: ['--import', EXIT_WITH_PARENT], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const stdout = child.stdout!.setEncoding('utf8');

  let output = '';
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`Azurite did not start within ${START_TIMEOUT_MS / 1000} s:\n${output}`));
    }, START_TIMEOUT_MS);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`Azurite exited (code ${code}) before it listened:\n${output}`));
    };
    const onOutput = (chunk: string) => {
      output += chunk;
      const listening = LISTENING.exec(output);
      if (!listening) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      stdout.off('data', onOutput).resume();
      resolve(listening[1]!);
    };
    stdout.on('data', onOutput);
    child.once('exit', onExit);
  });

  const queueEndpoint = `${origin}/${AZURITE_ACCOUNT_NAME}`;
  return {
    connectionString: `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT_NAME};AccountKey=${AZURITE_ACCOUNT_KEY};QueueEndpoint=${queueEndpoint};`,
    queueEndpoint,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        // A hung shutdown must not hang the stack.
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        // Closing the IPC channel is the shutdown signal (EXIT_WITH_PARENT): Azurite saves its database and
        // exits, which it would not do with the channel still open. A process already on its way out has no channel.
        if (child.connected) child.disconnect();
      }),
  };
}
