/**
 * The whole API on one machine: the app's functions in the local Functions host, plus an embedded part
 * for each setting that is not given (Cosmos DB, Entra ID and Graph, the storage queue). A setting that
 * is given is always used, so the same stack can run against real Azure resources and a real tenant.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { appRootAbove } from '../shared/lib/app-root.js';
import { ON_BEHALF_OF_CREDENTIALS } from '../shared/settings/read.js';
import { SETTINGS } from '../shared/settings/catalog.js';
import { startAzuriteQueue } from './storage/azurite.js';
import { startCosmosEmulator, type CosmosEmulator } from './cosmos/emulator.js';
import { embedsIdentityProvider, given, LOCAL_APP_IDENTITY_CLIENT_ID, LOCAL_CLIENT_ID, LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID } from './defaults.js';
import type { HostReady } from './host/functions-host.js';
import { directoryUser, generateDirectoryUsers, startGraphStandIn, type GraphStandIn } from './graph/stand-in.js';
import { v2Issuer } from './identity/entra-token.js';
import {
  DEFAULT_LOCAL_USERNAME,
  GRAPH_RESOURCE,
  servicePrincipalObjectId,
  startIdentityProvider,
  TOKEN_EXCHANGE_AUDIENCES,
  writeIdentityProviderInfo,
  type IdentityProvider,
} from './identity/provider.js';
import { claimDataFolder } from './ports.js';
import { loadOrCreateTlsCertificate } from './tls.js';

// The database setting the app and its change feed trigger share, as the settings name it.
const COSMOS_CONNECTION = 'COSMOS_CONNECTION' satisfies keyof typeof SETTINGS;
const LOCAL_TENANTS = [LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID];

export interface StackOptions {
  apiPort: number;
  identityProviderPort: number;
  /** Keeps data, keys and certificates between runs; without it everything is thrown away. */
  dataDir?: string;
  /** The settings given (environment, local.settings.json); empty values count as not given. */
  settings: Record<string, string | undefined>;
  /** The host's log: 'inherit' shows it on this console, a function gets it line by line; without either it is dropped. */
  hostOutput?: 'inherit' | ((line: string) => void);
}

/** The folder holding the app's package.json, whether this runs from source or from dist/. */
export const appRoot = (): string => appRootAbove(import.meta.url);

export async function startStack(options: StackOptions) {
  const { settings, dataDir, hostOutput } = options;
  const hostEnvironment = Object.fromEntries(Object.entries(settings).filter(([, value]) => value?.trim())) as Record<string, string>;
  const started: { close(): Promise<void> }[] = [];
  const embedded: string[] = [];
  // Without a data folder the certificate lives in a temporary one, removed when the stack stops.
  const tlsDir = dataDir ? join(dataDir, 'tls') : await mkdtemp(join(tmpdir(), 'lms-local-tls-'));
  if (!dataDir) started.push({ close: () => rm(tlsDir, { recursive: true, force: true }) });
  const tls = await loadOrCreateTlsCertificate(tlsDir);

  try {
    // A data folder is one stack's: two would write the same database and queues.
    if (dataDir) started.push({ close: await claimDataFolder(dataDir, { apiPort: options.apiPort, identityProviderPort: options.identityProviderPort }) });
    let identityProvider: IdentityProvider | undefined;
    let graph: GraphStandIn | undefined;
    if (embedsIdentityProvider(settings)) {
      const identityDir = dataDir ? join(dataDir, 'identity') : undefined;
      // Without a managed identity endpoint, an identity-based setting pointed at Azure signs in as the developer.
      const identityBased = Object.keys(settings).some((name) => name.includes('__') && given(settings, name));
      const assertsWithIdentity = !identityBased && !ON_BEHALF_OF_CREDENTIALS.some((name) => given(settings, name));
      identityProvider = await startIdentityProvider({
        port: options.identityProviderPort,
        tenants: LOCAL_TENANTS,
        clientId: LOCAL_CLIENT_ID,
        ...(assertsWithIdentity ? { managedIdentities: { systemAssigned: randomUUID(), userAssigned: [LOCAL_APP_IDENTITY_CLIENT_ID] } } : {}),
        // The audiences the API is told to accept are App ID URIs of its registration, which Entra issues tokens for.
        appIdUris: given(settings, 'AUTH_AUDIENCES')?.split(/\s*,\s*/) ?? [],
        tls,
        ...(identityDir ? { dataDir: identityDir } : {}),
      });
      started.push(identityProvider);
      const { authorityHost } = identityProvider;
      Object.assign(hostEnvironment, {
        AUTH_TENANT_ID: LOCAL_HOME_TENANT_ID,
        AUTH_ALLOWED_TENANTS: LOCAL_TENANTS.join(','),
        AUTH_CLIENT_ID: LOCAL_CLIENT_ID,
        AUTH_AUTHORITY_HOST: authorityHost,
      });
      embedded.push(`identity provider ${authorityHost}`);
      if (identityDir) {
        await writeIdentityProviderInfo(identityDir, { authorityHost, tenants: LOCAL_TENANTS, clientId: LOCAL_CLIENT_ID, caCertPath: tls.certPath });
      }
      // On-Behalf-Of signs in as in Azure: the app's identity's token is its client assertion, which the API's
      // federated identity credential trusts.
      if (assertsWithIdentity) {
        identityProvider.addFederatedIdentityCredential({
          name: 'local-function-app',
          issuer: v2Issuer(authorityHost, LOCAL_HOME_TENANT_ID),
          subject: servicePrincipalObjectId(LOCAL_HOME_TENANT_ID, LOCAL_APP_IDENTITY_CLIENT_ID),
          audiences: [TOKEN_EXCHANGE_AUDIENCES[0]!],
        });
        Object.assign(hostEnvironment, identityProvider.managedIdentity, { AUTH_MANAGED_IDENTITY_CLIENT_ID: LOCAL_APP_IDENTITY_CLIENT_ID });
      } else if (!ON_BEHALF_OF_CREDENTIALS.some((name) => given(settings, name))) {
        // The local identity provider takes any secret.
        hostEnvironment.AUTH_CLIENT_SECRET = 'local-development-secret';
      }
      // Microsoft Graph can only be played locally for tokens of the local identity provider.
      if (!given(settings, 'GRAPH_BASE_URL')) {
        // Each local tenant's directory: the default token user and a few dozen colleagues.
        const users = Object.fromEntries(
          LOCAL_TENANTS.map((tenant) => [tenant, [directoryUser(tenant, DEFAULT_LOCAL_USERNAME, 'Dev User'), ...generateDirectoryUsers(tenant, 30)]]),
        );
        graph = await startGraphStandIn({ identityProvider, users });
        started.push(graph);
        Object.assign(hostEnvironment, { GRAPH_BASE_URL: graph.baseUrl, GRAPH_RESOURCE });
        embedded.push(`Microsoft Graph ${graph.baseUrl}`);
      }
    }

    let cosmos: CosmosEmulator | undefined;
    // The database npm start uses unless told another, the embedded one's or a given account's.
    const database = given(settings, 'COSMOS_DATABASE') ?? SETTINGS.COSMOS_DATABASE.default;
    hostEnvironment.COSMOS_DATABASE = database;
    if (!given(settings, COSMOS_CONNECTION) && !given(settings, `${COSMOS_CONNECTION}__accountEndpoint`)) {
      cosmos = await startCosmosEmulator({ port: 0, host: '127.0.0.1', database, tls, ...(dataDir ? { dataDir: join(dataDir, 'cosmos') } : {}) });
      started.push(cosmos);
      hostEnvironment[COSMOS_CONNECTION] = cosmos.connectionString;
      embedded.push(`Cosmos DB ${cosmos.endpoint}${cosmos.restored ? ` (${cosmos.restored} documents restored)` : ''}`);
    }

    // A storage account given by a connection string (UseDevelopmentStorage=true included) or by
    // identity-based settings (AzureWebJobsStorage__queueServiceUri) is used as it is.
    if (!Object.keys(settings).some((name) => /^AzureWebJobsStorage(__|$)/.test(name) && given(settings, name))) {
      const azurite = await startAzuriteQueue(dataDir ? { dataDir: join(dataDir, 'azurite') } : {});
      started.push(azurite);
      hostEnvironment.AzureWebJobsStorage = azurite.connectionString;
      embedded.push(`Azurite queue ${azurite.queueEndpoint}`);
    }
    hostEnvironment.CURSOR_SIGNING_KEY ??= await cursorSigningKey(dataDir);
    // Receivers on a developer's machine listen on loopback, over plain http.
    hostEnvironment.WEBHOOKS_ALLOW_LOOPBACK ??= 'true';
    for (const name of ['RAG_QUEUE_NAME', 'WEBHOOKS_QUEUE_NAME', 'WEBHOOKS_SWEEP_SCHEDULE'] as const) hostEnvironment[name] ??= SETTINGS[name].default;

    const extraCaCerts = await trustedCertificates(settings, tls.certPath);
    const startHost = (port: number) => startHostProcess({ port, environment: hostEnvironment, extraCaCerts, hostOutput });
    const { pid, stop, exited: firstExit, ...host } = await startHost(options.apiPort);
    let [hostPid, stopHost, exited, stopping] = [pid, stop, firstExit, false];
    // A host that dies unasked (a crash, an out-of-memory kill) is started again on its port, as Azure starts its worker again.
    const restartOnExit = (): void =>
      void exited.then(async ([code, signal]) => {
        if (stopping) return;
        console.error(`The local Functions host exited (${signal ?? `code ${code}`}): starting it again`);
        ({ pid: hostPid, stop: stopHost, exited } = await startHost(host.port));
        if (stopping) await stopHost();
        else restartOnExit();
      });
    restartOnExit();
    started.push({ close: () => ((stopping = true), stopHost()) });

    return {
      ...host,
      get hostPid() {
        return hostPid;
      },
      apiBaseUrl: `http://localhost:${host.port}/api`,
      caCertPath: tls.certPath,
      tls,
      /** The storage account the host uses, unless it is given by identity-based settings. */
      storageConnectionString: hostEnvironment.AzureWebJobsStorage,
      cursorSigningKey: hostEnvironment.CURSOR_SIGNING_KEY,
      /** Exactly the settings the host runs with: a second host given them is a second instance of the same app. */
      environment: hostEnvironment,
      identityProvider,
      graph,
      cosmos,
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

export interface HostProcessOptions {
  port: number;
  /** Exactly the settings the app sees, as in Azure's app settings. */
  environment: Record<string, string>;
  /** A PEM file with extra certificates to trust (the embedded parts' certificate). */
  extraCaCerts?: string;
  hostOutput?: StackOptions['hostOutput'];
  /** The function app to load; by default this one. */
  appRoot?: string;
}

/** Runs the app's functions in the local Functions host, as a child process like Azure's worker. */
export async function startHostProcess(options: HostProcessOptions) {
  const root = appRoot();
  const script = join(root, 'dist', 'local', 'host', 'functions-host.js');
  if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build\` first`);
  const functionApp = options.appRoot ?? root;
  const { hostOutput } = options;
  const output = typeof hostOutput === 'function' ? 'pipe' : (hostOutput ?? 'ignore');
  const child = fork(script, [], {
    // The app is a minified bundle: stack traces in the log should still name the source.
    execArgv: ['--enable-source-maps'],
    cwd: functionApp,
    env: {
      ...options.environment,
      PATH: process.env.PATH ?? '',
      NODE_PATH: join(root, 'local', 'host', 'functions-core'),
      ...(options.extraCaCerts ? { NODE_EXTRA_CA_CERTS: options.extraCaCerts } : {}),
      LOCAL_PORT: String(options.port),
    },
    stdio: ['ignore', output, output, 'ipc'],
  });
  if (typeof hostOutput === 'function') for (const input of [child.stdout!, child.stderr!]) createInterface({ input }).on('line', hostOutput);
  const ready = await new Promise<HostReady>((resolve, reject) => {
    child.once('message', (message) => resolve(message as HostReady));
    child.once('exit', (code) => reject(new Error(`The functions host exited (code ${code}) before it was ready`)));
  });
  return { ...ready, pid: child.pid!, exited: once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>, stop: () => stopProcess(child) };
}

/** A key to sign paging cursors with: kept in the data folder, so cursors survive a restart, or new for a stack without one. */
async function cursorSigningKey(dataDir: string | undefined): Promise<string> {
  const fresh = randomBytes(32).toString('base64');
  if (!dataDir) return fresh;
  const file = join(dataDir, 'cursor-signing-key');
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, fresh, { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  return (await readFile(file, 'utf8')).trim();
}

/** NODE_EXTRA_CA_CERTS takes one file: the local certificate, plus any the user already trusts. */
async function trustedCertificates(settings: StackOptions['settings'], caCertPath: string): Promise<string> {
  const userFile = given(settings, 'NODE_EXTRA_CA_CERTS');
  if (!userFile) return caCertPath;
  const combined = join(dirname(caCertPath), 'trusted-certificates.pem');
  await writeFile(combined, `${await readFile(caCertPath, 'utf8')}\n${await readFile(userFile, 'utf8')}`);
  return combined;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  // Exited, or killed by a signal (then exitCode stays null).
  if (child.exitCode !== null || child.signalCode !== null) return;
  // 'close', not 'exit': by then the child's output has been read to the end, its last log lines too.
  const closed = once(child, 'close');
  child.kill('SIGTERM');
  await closed;
}
