/**
 * The mutation run's only global setup: a TLS key pair the test workers trust, for stand-ins that must
 * speak HTTPS (msal-node refuses plain http). `npm run mutation` makes it before Stryker starts
 * (MUTATION_TLS_DIR, already in NODE_EXTRA_CA_CERTS: Stryker's worker threads trust only what the
 * process started with); a plain `vitest run` with this config makes one here, before its workers
 * start. The full suite's global setup provides the embedded stack's pair under the same name.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadOrCreateTlsCertificate } from '../../local/tls.js';

let madeHere: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  const given = process.env.MUTATION_TLS_DIR;
  if (!given) madeHere = await mkdtemp(join(tmpdir(), 'lms-mutation-tls-'));
  const tls = await loadOrCreateTlsCertificate(given ?? madeHere!);
  if (!given) process.env.NODE_EXTRA_CA_CERTS = tls.certPath;
  project.provide('trustedTls', { cert: tls.cert, key: tls.key, certPath: tls.certPath });
}

export async function teardown(): Promise<void> {
  if (madeHere) await rm(madeHere, { recursive: true, force: true });
}
