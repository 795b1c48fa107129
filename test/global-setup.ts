import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startStack, type LocalStack } from '../local/stack.js';
import { trustInTestWorkers } from './support/trusted-tls-setup.js';

const GIVEN_SETTINGS = /^(AUTH_|COSMOS_|GRAPH_|EMBEDDINGS_|RAG_|WEBHOOKS_|CURSOR_|AzureWebJobs)/;

/** Everything a test needs to reach the stack; plain data, since tests run in other processes. */
export interface StackInfo {
  apiBaseUrl: string;
  authorityHost: string;
  caCertPem: string;
  caCertPath: string;
  /** The embedded parts' TLS key pair, so a test can serve its own identity provider that clients trust. */
  tls: { cert: string; key: string; certPath: string };
  privateJwk: Record<string, unknown>;
  signingKid: string;
  cosmosEndpoint: string;
  cosmosKey: string;
  /** What COSMOS_CONNECTION holds for the embedded store. */
  cosmosConnectionString: string;
  /** The embedded Azurite's connection string, which the host has as AzureWebJobsStorage. */
  storageConnectionString: string;
  /** The Microsoft Graph stand-in, which the host has as GRAPH_BASE_URL. */
  graphBaseUrl: string;
  /** The key the host signs paging cursors with. */
  cursorSigningKey: string;
  /** App Service's managed identity endpoint (IDENTITY_ENDPOINT, IDENTITY_HEADER) the host's On-Behalf-Of asks its assertion of. */
  managedIdentity: Record<'IDENTITY_ENDPOINT' | 'IDENTITY_HEADER', string>;
  hostLogFile: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackInfo;
    /** A TLS key pair the test workers trust: the stack's here, a certificate of its own in the mutation run. */
    trustedTls: StackInfo['tls'];
  }
}

let stack: LocalStack | undefined;

export async function setup(project: TestProject): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'lms-test-'));
  const hostLogFile = join(folder, 'host.log');
  writeFileSync(hostLogFile, '');
  // The suite always runs on embedded parts, whatever the developer's shell has set.
  const settings = Object.fromEntries(Object.entries(process.env).filter(([name]) => !GIVEN_SETTINGS.test(name)));
  stack = await startStack({
    apiPort: 0,
    identityProviderPort: 0,
    settings,
    hostOutput: (line) => appendFileSync(hostLogFile, `${line}\n`),
  });
  const { identityProvider, cosmos } = stack;
  // Test workers start after this, so they trust the embedded parts' certificate as the host does.
  await trustInTestWorkers(stack.caCertPath, folder);
  project.provide('trustedTls', stack.tls);
  project.provide('stack', {
    apiBaseUrl: stack.apiBaseUrl,
    authorityHost: identityProvider!.authorityHost,
    caCertPem: identityProvider!.caCertPem,
    caCertPath: stack.caCertPath,
    tls: stack.tls,
    privateJwk: identityProvider!.privateJwk,
    signingKid: identityProvider!.signingKid,
    cosmosEndpoint: cosmos!.endpoint,
    cosmosKey: cosmos!.key,
    cosmosConnectionString: cosmos!.connectionString,
    storageConnectionString: stack.storageConnectionString!,
    graphBaseUrl: stack.graph!.baseUrl,
    cursorSigningKey: stack.cursorSigningKey,
    managedIdentity: identityProvider!.managedIdentity!,
    hostLogFile,
  });
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
