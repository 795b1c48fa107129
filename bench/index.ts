/**
 * `npm run bench`: prints the benchmark figures as a table, or as JSON with `--json`.
 * Figures, not pass/fail: the goals are judged by reading them.
 *
 * The benchmarks run in a child process that trusts the embedded parts' TLS certificate from its
 * start (NODE_EXTRA_CA_CERTS is read only then), as the local Functions host does.
 */
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrCreateTlsCertificate } from '../local/tls.js';

const tlsDir = await mkdtemp(join(tmpdir(), 'lms-bench-tls-'));
try {
  const { certPath } = await loadOrCreateTlsCertificate(tlsDir);
  const child = fork(fileURLToPath(new URL('./run.js', import.meta.url)), process.argv.slice(2), {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: certPath, BENCH_TLS_DIR: tlsDir },
    stdio: 'inherit',
  });
  const code = await new Promise<number>((resolve) => child.on('exit', (exitCode) => resolve(exitCode ?? 1)));
  process.exitCode = code;
} finally {
  await rm(tlsDir, { recursive: true, force: true });
}
