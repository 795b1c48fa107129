/**
 * The fast tests' only global setup: a TLS key pair the test workers trust, for stand-ins that must
 * speak HTTPS (msal-node refuses plain http). `npm run mutation` makes it before Stryker starts
 * (MUTATION_TLS_DIR, already in NODE_EXTRA_CA_CERTS: Stryker's worker threads trust only what the
 * process started with); a plain `vitest run` makes one here, before its workers start. The stack
 * tests' global setup provides the embedded stack's pair under the same name.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadOrCreateTlsCertificate } from '../../local/tls.js';

let madeHere: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  const given = process.env.MUTATION_TLS_DIR;
  if (!given) madeHere = await mkdtemp(join(tmpdir(), 'lms-mutation-tls-'));
  const tls = await loadOrCreateTlsCertificate(given ?? madeHere!);
  if (!given) await trustInTestWorkers(tls.certPath, madeHere!);
  project.provide('trustedTls', { cert: tls.cert, key: tls.key, certPath: tls.certPath });
}

export async function teardown(): Promise<void> {
  if (madeHere) await rm(madeHere, { recursive: true, force: true });
}

/**
 * Adds a certificate to those the test workers trust (NODE_EXTRA_CA_CERTS, read as they start, after
 * every global setup), keeping the others: `npm test` runs the fast and the stack setups in either order.
 */
export async function trustInTestWorkers(certPath: string, folder: string): Promise<void> {
  const trusted = process.env.NODE_EXTRA_CA_CERTS;
  if (!trusted) {
    process.env.NODE_EXTRA_CA_CERTS = certPath;
    return;
  }
  const both = join(folder, 'trusted-by-test-workers.pem');
  await writeFile(both, `${await readFile(trusted, 'utf8')}\n${await readFile(certPath, 'utf8')}`);
  process.env.NODE_EXTRA_CA_CERTS = both;
}
