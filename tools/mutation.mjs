/**
 * `npm run mutation`: Stryker over the modules that carry the guarantees (stryker.config.mjs), then
 * the score of each file (tools/mutation-scores.mjs, which fails under the threshold).
 *
 * The fast tests include stand-ins that must speak HTTPS (msal-node refuses plain http). Stryker runs
 * them in worker threads, which trust only what NODE_EXTRA_CA_CERTS named when the process started:
 * so the certificate is made here, before Stryker starts, and test/support/trusted-tls-setup.ts loads it.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';

const THRESHOLD = process.env.MUTATION_THRESHOLD ?? '90';

const [major] = process.versions.node.split('.').map(Number);
if (major < 20) {
  console.error(`npm run mutation needs Node 20 or later (Stryker 9.6); this is Node ${process.versions.node}.`);
  process.exit(1);
}

const tlsDir = mkdtempSync(join(tmpdir(), 'lms-mutation-tls-'));
try {
  // The file names local/tls.ts keeps a pair under, so that the global setup loads this one.
  const pems = await generate(
    [
      { name: 'commonName', value: 'localhost' },
      { name: 'organizationName', value: `LMS mutation run ${randomUUID()}` },
    ],
    {
      keySize: 2048,
      algorithm: 'sha256',
      extensions: [
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
          ],
        },
      ],
    },
  );
  writeFileSync(join(tlsDir, 'tls-cert.pem'), pems.cert);
  writeFileSync(join(tlsDir, 'tls-key.pem'), pems.private, { mode: 0o600 });

  const env = { ...process.env, NODE_EXTRA_CA_CERTS: join(tlsDir, 'tls-cert.pem'), MUTATION_TLS_DIR: tlsDir };
  const run = (command, args) => spawnSync(command, args, { stdio: 'inherit', env, shell: process.platform === 'win32' }).status ?? 1;
  // Arguments go to Stryker: `npm run mutation -- --mutate shared/webhooks/sender.ts` for one file.
  const stryker = run('npx', ['stryker', 'run', ...process.argv.slice(2)]);
  const scores = run(process.execPath, ['tools/mutation-scores.mjs', THRESHOLD]);
  process.exitCode = stryker || scores;
} finally {
  rmSync(tlsDir, { recursive: true, force: true });
}
