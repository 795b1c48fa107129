/**
 * The embedded storage queue: Azurite's queue service, so that the app and the local host use the real
 * @azure/storage-queue client against it. A child process, because Azurite loads Application Insights,
 * which patches console, winston and the Azure SDK on load.
 */
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// Azurite's well-known development account, the one every storage tool knows (it is public, not a secret).
const ACCOUNT_NAME = 'devstoreaccount1';
const ACCOUNT_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5_000;
// The line Azurite prints once it listens: on a free port, the only place the port appears.
const LISTENING = /successfully listens on (https?:\/\/\S+)/;
// Azurite does not notice that its parent is gone; this makes a closed IPC channel a normal shutdown (SIGTERM).
const EXIT_WITH_PARENT = 'data:text/javascript,process.once("disconnect",()=>process.kill(process.pid,"SIGTERM"))';

export type AzuriteQueue = Awaited<ReturnType<typeof startAzuriteQueue>>;

/**
 * Azurite's queue service on a free port; with `dataDir` its queues are kept there between runs, else in memory only. With `tls`
 * (certificate and key files) it serves HTTPS and takes Entra tokens too (its basic OAuth: lifetime, issuer, audience; no signature).
 */
export async function startAzuriteQueue(options: { dataDir?: string; tls?: { certPath: string; keyPath: string } } = {}) {
  const script = join(createRequire(import.meta.url).resolve('azurite/package.json'), '..', 'dist', 'src', 'queue', 'main.js');
  const args = [
    ...['--queueHost', '127.0.0.1', '--queuePort', '0'],
    // No usage data to Microsoft; any service version the storage SDK speaks; no access log line per request.
    ...['--disableTelemetry', '--skipApiVersionCheck', '--silent'],
    ...(options.dataDir ? ['--location', options.dataDir] : ['--inMemoryPersistence']),
    ...(options.tls ? ['--cert', options.tls.certPath, '--key', options.tls.keyPath, '--oauth', 'basic'] : []),
  ];
  // AZURITE_ACCOUNTS in the developer's shell would replace the well-known account this module connects with.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AZURITE_')));
  // Azurite's errors go to this console; its stdout is read only for the line that says it listens. In a process group of its own
  // (detached), so that a terminal's Ctrl+C stops the stack, which closes it after the host: the host's last invocations settle their messages.
  const child = fork(script, args, { env, execArgv: ['--import', EXIT_WITH_PARENT], stdio: ['ignore', 'pipe', 'inherit', 'ipc'], detached: true });
  const stdout = child.stdout!.setEncoding('utf8');

  let output = '';
  const origin = await new Promise<string>((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`Azurite ${why}:\n${output}`));
    };
    const timer = setTimeout(() => fail(`did not start within ${START_TIMEOUT_MS / 1000} s`), START_TIMEOUT_MS);
    const onExit = (code: number | null) => fail(`exited (code ${code}) before it listened`);
    const onOutput = (chunk: string) => {
      const listening = LISTENING.exec((output += chunk));
      if (!listening) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      stdout.off('data', onOutput).resume();
      resolve(listening[1]!);
    };
    stdout.on('data', onOutput);
    child.once('exit', onExit);
  });

  const queueEndpoint = `${origin}/${ACCOUNT_NAME}`;
  const protocol = options.tls ? 'https' : 'http';
  return {
    connectionString: `DefaultEndpointsProtocol=${protocol};AccountName=${ACCOUNT_NAME};AccountKey=${ACCOUNT_KEY};QueueEndpoint=${queueEndpoint};`,
    /** `http(s)://127.0.0.1:<port>/devstoreaccount1` */
    queueEndpoint,
    pid: child.pid!,
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
        // exits, which it would not do with the channel still open. A process already on its way out has none.
        if (child.connected) child.disconnect();
      }),
  };
}
