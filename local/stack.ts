/**
 * The whole API on one machine: the app's functions in the local Functions host, plus whatever
 * embedded part stands in for a setting that is not given (Cosmos DB, Entra ID, the storage queue).
 * A setting that is given is always used, so the same stack can run against real Azure resources
 * and a real tenant.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startAzuriteQueue, type AzuriteQueue } from './azurite.js';
import { appRootAbove } from '../shared/app-root.js';
import { startCosmosEmulator, type CosmosEmulator } from './cosmos-emulator.js';
import { LOCAL_CLIENT_ID, LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID } from './defaults.js';
import { directoryUser, generateDirectoryUsers, startGraphStandIn, type GraphStandIn } from './graph-stand-in.js';
import { DEFAULT_LOCAL_USERNAME, GRAPH_RESOURCE, startIdentityProvider, writeIdentityProviderInfo, type IdentityProvider } from './identity-provider.js';
import { SETTINGS } from '../shared/settings.js';
import { loadOrCreateTlsCertificate } from './tls.js';

// The database setting the app and its change feed trigger share, as the settings name it.
const COSMOS_CONNECTION = 'COSMOS_CONNECTION' satisfies keyof typeof SETTINGS;
const AUTH_SETTINGS = ['AUTH_TENANT_ID', 'AUTH_CLIENT_ID', 'AUTH_AUTHORITY_HOST', 'AUTH_ALLOWED_TENANTS'];

export interface StackOptions {
  apiPort: number;
  identityProviderPort: number;
  /** Keeps data, keys and certificates between runs; without it everything is thrown away. */
  dataDir?: string;
  /** The settings given (environment, local.settings.json); empty values count as not given. */
  settings: Record<string, string | undefined>;
  /** 'inherit' shows the host's log on this console; 'pipe' hands each line to onHostOutput. */
  hostOutput: 'inherit' | 'pipe';
  onHostOutput?: (line: string) => void;
}

/** The folder holding the app's package.json, whether this runs from source or from dist/. */
export const appRoot = (): string => appRootAbove(import.meta.url);

function given(settings: StackOptions['settings'], name: string): string | undefined {
  const value = settings[name]?.trim();
  return value ? value : undefined;
}

/** The local identity provider stands in for Entra ID only when no auth setting is given. */
export function embedsIdentityProvider(settings: StackOptions['settings']): boolean {
  return !AUTH_SETTINGS.some((name) => given(settings, name));
}

/** Who is in each local tenant's directory: the default token user and a few dozen colleagues. */
function localDirectory() {
  return Object.fromEntries(
    [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID].map((tenant) => [
      tenant,
      [directoryUser(tenant, DEFAULT_LOCAL_USERNAME, 'Dev User'), ...generateDirectoryUsers(tenant, 30)],
    ]),
  );
}

export async function startStack(options: StackOptions) {
  const hostEnvironment: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.settings)) if (value?.trim()) hostEnvironment[name] = value;
  const started: { close(): Promise<void> }[] = [];
  const embedded: string[] = [];
  // Without a data folder the certificate lives in a temporary one, removed when the stack stops.
  const tlsDir = options.dataDir ? join(options.dataDir, 'tls') : await mkdtemp(join(tmpdir(), 'lms-local-tls-'));
  if (!options.dataDir) started.push({ close: () => rm(tlsDir, { recursive: true, force: true }) });
  const tls = await loadOrCreateTlsCertificate(tlsDir);

  try {
    let identityProvider: IdentityProvider | undefined;
    if (embedsIdentityProvider(options.settings)) {
      identityProvider = await startIdentityProvider({
        port: options.identityProviderPort,
        tenants: [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID],
        clientId: LOCAL_CLIENT_ID,
        tls,
        ...(options.dataDir ? { dataDir: join(options.dataDir, 'identity') } : {}),
      });
      started.push(identityProvider);
      Object.assign(hostEnvironment, {
        AUTH_TENANT_ID: LOCAL_HOME_TENANT_ID,
        AUTH_ALLOWED_TENANTS: `${LOCAL_HOME_TENANT_ID},${LOCAL_OTHER_TENANT_ID}`,
        AUTH_CLIENT_ID: LOCAL_CLIENT_ID,
        AUTH_AUTHORITY_HOST: identityProvider.authorityHost,
      });
      embedded.push(`identity provider ${identityProvider.authorityHost}`);
      if (options.dataDir) {
        await writeIdentityProviderInfo(join(options.dataDir, 'identity'), {
          authorityHost: identityProvider.authorityHost,
          tenants: [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID],
          clientId: LOCAL_CLIENT_ID,
          caCertPath: tls.certPath,
        });
      }
    }

    // Microsoft Graph can only be played locally for tokens of the local identity provider.
    let graph: GraphStandIn | undefined;
    if (identityProvider && !given(options.settings, 'GRAPH_BASE_URL')) {
      graph = await startGraphStandIn({ identityProvider, users: localDirectory() });
      started.push(graph);
      hostEnvironment.GRAPH_BASE_URL = graph.baseUrl;
      hostEnvironment.GRAPH_RESOURCE = GRAPH_RESOURCE;
      embedded.push(`Microsoft Graph ${graph.baseUrl}`);
    }
    if (identityProvider && !given(options.settings, 'AUTH_CLIENT_SECRET') && !given(options.settings, 'AUTH_CLIENT_CERTIFICATE_PATH')) {
      // The local identity provider takes any secret; On-Behalf-Of needs one to send.
      hostEnvironment.AUTH_CLIENT_SECRET = 'local-development-secret';
    }

    let cosmos: CosmosEmulator | undefined;
    if (!given(options.settings, COSMOS_CONNECTION) && !given(options.settings, `${COSMOS_CONNECTION}__accountEndpoint`)) {
      const database = given(options.settings, 'COSMOS_DATABASE') ?? SETTINGS.COSMOS_DATABASE.default;
      cosmos = await startCosmosEmulator({
        port: 0,
        host: '127.0.0.1',
        database,
        tls,
        ...(options.dataDir ? { dataDir: join(options.dataDir, 'cosmos') } : {}),
      });
      started.push(cosmos);
      Object.assign(hostEnvironment, { [COSMOS_CONNECTION]: cosmos.connectionString, COSMOS_DATABASE: database });
      embedded.push(`Cosmos DB ${cosmos.endpoint}${cosmos.restored ? ` (${cosmos.restored} documents restored)` : ''}`);
    }

    // A storage account given by a connection string (UseDevelopmentStorage=true included) or by
    // identity-based settings (AzureWebJobsStorage__queueServiceUri) is used as it is.
    let azurite: AzuriteQueue | undefined;
    const storageGiven = Object.keys(options.settings).some((name) => /^AzureWebJobsStorage(__|$)/.test(name) && given(options.settings, name));
    if (!storageGiven) {
      azurite = await startAzuriteQueue(options.dataDir ? { dataDir: join(options.dataDir, 'azurite') } : {});
      started.push(azurite);
      hostEnvironment.AzureWebJobsStorage = azurite.connectionString;
      embedded.push(`Azurite queue ${azurite.queueEndpoint}`);
    }
    if (!given(options.settings, 'RAG_QUEUE_NAME')) hostEnvironment.RAG_QUEUE_NAME = SETTINGS.RAG_QUEUE_NAME.default;
    if (!given(options.settings, 'CURSOR_SIGNING_KEY')) hostEnvironment.CURSOR_SIGNING_KEY = await cursorSigningKey(options.dataDir);
    // Receivers on a developer's machine listen on loopback, over plain http.
    hostEnvironment.WEBHOOKS_ALLOW_LOOPBACK ??= 'true';
    hostEnvironment.WEBHOOKS_QUEUE_NAME ??= SETTINGS.WEBHOOKS_QUEUE_NAME.default;
    hostEnvironment.WEBHOOKS_SWEEP_SCHEDULE ??= SETTINGS.WEBHOOKS_SWEEP_SCHEDULE.default;

    const host = await startHostProcess({
      port: options.apiPort,
      environment: hostEnvironment,
      extraCaCerts: await trustedCertificates(options, tls.certPath),
      hostOutput: options.hostOutput,
      onHostOutput: options.onHostOutput,
    });
    started.push({ close: host.stop });

    return {
      apiBaseUrl: `http://localhost:${host.port}/api`,
      caCertPath: tls.certPath,
      tls,
      port: host.port,
      hostPid: host.pid,
      routes: host.routes,
      queueFunctions: host.queueFunctions,
      timerFunctions: host.timerFunctions,
      cosmosFunctions: host.cosmosFunctions,
      /** The storage account the host uses, unless it is given by identity-based settings. */
      storageConnectionString: hostEnvironment.AzureWebJobsStorage,
      cursorSigningKey: hostEnvironment.CURSOR_SIGNING_KEY,
      /** Exactly the settings the host runs with: a second host given them is a second instance of the same app. */
      environment: hostEnvironment,
      identityProvider,
      graph,
      cosmos,
      azurite,
      embedded,
      async stop(): Promise<void> {
        for (const part of started.reverse()) await part.close();
      },
    };
  } catch (error) {
    for (const part of started.reverse()) await part.close().catch(() => undefined);
    throw error;
  }
}

export type LocalStack = Awaited<ReturnType<typeof startStack>>;

interface HostReady {
  ready: true;
  port: number;
  routes: { name: string; methods: string[]; template: string }[];
  queueFunctions: { name: string; queue: string }[];
  timerFunctions: { name: string; schedule: string }[];
  cosmosFunctions: { name: string; container: string; leaseContainer: string }[];
}

export interface HostProcessOptions {
  port: number;
  /** Exactly the settings the app sees, as in Azure's app settings. */
  environment: Record<string, string>;
  /** A PEM file with extra certificates to trust (the embedded parts' certificate). */
  extraCaCerts?: string;
  hostOutput: StackOptions['hostOutput'];
  onHostOutput?: StackOptions['onHostOutput'];
  /** The function app to load; by default this one. */
  appRoot?: string;
}

/** Runs the app's functions in the local Functions host, as a child process like Azure's worker. */
export async function startHostProcess(options: HostProcessOptions) {
  const root = appRoot();
  const script = join(root, 'dist', 'local', 'functions-host.js');
  if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build\` first`);
  const functionApp = options.appRoot ?? root;
  const child = fork(script, [], {
    // The app is a minified bundle: stack traces in the log should still name the source.
    execArgv: ['--enable-source-maps'],
    cwd: functionApp,
    env: {
      ...options.environment,
      PATH: process.env.PATH ?? '',
      NODE_PATH: join(root, 'local', 'functions-core'),
      ...(options.extraCaCerts ? { NODE_EXTRA_CA_CERTS: options.extraCaCerts } : {}),
      LOCAL_APP_ROOT: functionApp,
      LOCAL_PORT: String(options.port),
    },
    stdio: options.hostOutput === 'inherit' ? ['ignore', 'inherit', 'inherit', 'ipc'] : ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  if (options.hostOutput === 'pipe') {
    for (const stream of [child.stdout, child.stderr]) {
      let buffered = '';
      stream?.setEncoding('utf8').on('data', (chunk: string) => {
        const lines = (buffered + chunk).split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) options.onHostOutput?.(line);
      });
    }
  }
  const ready = await new Promise<HostReady>((resolve, reject) => {
    child.once('message', (message) => resolve(message as HostReady));
    child.once('exit', (code) => reject(new Error(`The functions host exited (code ${code}) before it was ready`)));
  });
  return {
    pid: child.pid!,
    port: ready.port,
    routes: ready.routes,
    queueFunctions: ready.queueFunctions,
    timerFunctions: ready.timerFunctions,
    cosmosFunctions: ready.cosmosFunctions,
    stop: () => stopProcess(child),
  };
}

/** A key to sign paging cursors with: kept in the data folder, so cursors survive a restart, or new for a stack without one. */
async function cursorSigningKey(dataDir: string | undefined): Promise<string> {
  const fresh = randomBytes(32).toString('base64');
  if (!dataDir) return fresh;
  const file = join(dataDir, 'cursor-signing-key');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, fresh, { mode: 0o600 });
  return fresh;
}

/** NODE_EXTRA_CA_CERTS takes one file: the local certificate, plus any the user already trusts. */
async function trustedCertificates(options: StackOptions, caCertPath: string): Promise<string> {
  const userFile = given(options.settings, 'NODE_EXTRA_CA_CERTS');
  if (!userFile) return caCertPath;
  const combined = join(dirname(caCertPath), 'trusted-certificates.pem');
  await mkdir(dirname(combined), { recursive: true });
  await writeFile(combined, `${await readFile(caCertPath, 'utf8')}\n${await readFile(userFile, 'utf8')}`);
  return combined;
}

function stopProcess(child: ChildProcess): Promise<void> {
  // Exited, or killed by a signal (then exitCode stays null).
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    // 'close', not 'exit': by then the child's output has been read to the end, its last log lines too.
    child.once('close', () => resolve());
    child.kill('SIGTERM');
  });
}
