/**
 * Hosts of the tests' own: the app started in a local Functions host with exactly the settings a test
 * gives it, its output captured, stopped at the end of the file; and free ports for parts that must
 * come back on the same port.
 */
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createServer as createNetServer, type AddressInfo, type Server } from 'node:net';
import { expect } from 'vitest';
import { startHostProcess } from '../../local/stack.js';
import type { HostileResponse } from './raw-http.js';
import { rememberSecret } from './secrets-and-logs.js';
import { HOME_TENANT, OTHER_TENANT, stack, stackAppSettings } from './stack.js';

export interface OwnHost {
  url: string;
  port: number;
  /** Every line the host printed. */
  lines: string[];
  /** The host's process id, found by the unique tag in its environment (Linux /proc). */
  pid(): Promise<number>;
  /** A failed expectation's message: the answer, and what the host logged for its request. */
  explain(response: HostileResponse): string;
  stop(): Promise<void>;
  /** Kills the host and waits until its process is gone: it sends nothing after. */
  kill(): Promise<void>;
}

/** The settings of a host that trusts the shared identity provider and uses the shared database. */
export function sharedStackSettings(): Record<string, string> {
  return {
    ...stackAppSettings,
    AUTH_ALLOWED_TENANTS: `${HOME_TENANT},${OTHER_TENANT}`,
    AUTH_CLIENT_SECRET: rememberSecret(`hostile-client-secret-${randomUUID()}`),
    AzureWebJobsStorage: stack.storageConnectionString,
    GRAPH_BASE_URL: stack.graphBaseUrl,
    RAG_QUEUE_NAME: `hostile-${randomUUID().slice(0, 8)}`,
  };
}

/** The settings of a host that serves a test file's own two tenants, whose tokens that file's identity provider issues. */
export function ownTenantsSettings(authorityHost: string, tenant: string, neighbour: string): Record<string, string> {
  return {
    AUTH_TENANT_ID: tenant,
    AUTH_ALLOWED_TENANTS: `${tenant},${neighbour}`,
    AUTH_AUTHORITY_HOST: authorityHost,
    AzureWebJobsStorage: stack.storageConnectionString,
  };
}

const ownHosts: OwnHost[] = [];

/** Starts the app in a local Functions host of its own, with exactly these settings, its output captured. */
export async function startOwnHost(environment: Record<string, string>, port = 0): Promise<OwnHost> {
  const tag = randomUUID();
  const lines: string[] = [];
  const host = await startHostProcess({
    port,
    environment: { ...environment, HOSTILE_HOST_TAG: tag },
    extraCaCerts: stack.caCertPath,
    hostOutput: (line) => lines.push(line),
  });
  let stopped = false;
  const own: OwnHost = {
    url: `http://127.0.0.1:${host.port}/api`,
    port: host.port,
    lines,
    pid: () => processWithTag(tag),
    explain(response) {
      const requestId: unknown = response.body?.requestId;
      const logged = typeof requestId === 'string' ? lines.filter((line) => line.includes(requestId)) : [];
      return [`${response.status} ${response.text.slice(0, 200)}`, ...logged].join('\n');
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await host.stop();
    },
    async kill() {
      stopped = true;
      process.kill(host.pid, 'SIGKILL');
      await expect.poll(() => isAlive(host.pid), { timeout: 10_000, interval: 20 }).toBe(false);
    },
  };
  ownHosts.push(own);
  return own;
}

/** Stops every host this test file started (a killed one is skipped: its stop would wait for an exit already past). */
export async function stopOwnHosts(): Promise<void> {
  await Promise.all(ownHosts.splice(0).map((host) => host.stop()));
}

/** Marks a host as gone without asking it to stop (after it was killed). */
export function forgetOwnHost(host: OwnHost): void {
  ownHosts.splice(ownHosts.indexOf(host), 1);
}

async function processWithTag(tag: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environment = await readFile(`/proc/${entry}/environ`, 'latin1').catch(() => '');
    if (environment.split('\0').includes(`HOSTILE_HOST_TAG=${tag}`)) return Number(entry);
  }
  throw new Error(`No process carries HOSTILE_HOST_TAG=${tag}`);
}

/** A TCP port that was free a moment ago, for a part that must come back on the same port. */
export async function freePort(): Promise<number> {
  const server: Server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether a process of this id still runs (signal 0 tests without sending one). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
