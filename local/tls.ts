/**
 * Certificates of the embedded parts, made by `selfsigned` and kept in a data directory so that a restart of
 * `npm start` keeps them (and so tokens) valid: the TLS certificate for localhost and 127.0.0.1 that the identity
 * provider and the Cosmos emulator serve, and the identity provider's token signing certificate.
 */
import { randomUUID, X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { generate } from 'selfsigned';

export type TlsCertificate = Awaited<ReturnType<typeof loadOrCreateTlsCertificate>>;

export const isFileMissing = (error: unknown): boolean => (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';

/** The certificate `<name>-cert.pem` and its key `<name>-key.pem` kept in dir, unless missing or expiring within a day; otherwise a new one stored there. */
export async function loadOrCreateCertificate(dir: string | undefined, name: string, generateCertificate: () => ReturnType<typeof generate>) {
  const create = () => generateCertificate().then((pems) => ({ cert: pems.cert, key: pems.private }));
  if (!dir) return create();
  const certPath = path.join(dir, `${name}-cert.pem`);
  const keyPath = path.join(dir, `${name}-key.pem`);
  try {
    const stored = { cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8') };
    if (new Date(new X509Certificate(stored.cert).validTo).getTime() > Date.now() + 24 * 60 * 60 * 1000) return stored;
  } catch (error) {
    if (!isFileMissing(error)) throw error;
  }
  const created = await create();
  await mkdir(dir, { recursive: true });
  await writeFile(keyPath, created.key, { mode: 0o600 });
  await writeFile(certPath, created.cert);
  return created;
}

/** The TLS certificate kept in dir, or a new one stored there: selfsigned's extensions for a server, with 127.0.0.1 for localhost. */
export async function loadOrCreateTlsCertificate(dir: string) {
  // A subject of its own: TLS clients find the issuer by name, so two stacks' certificates trusted side by side must not share one.
  const subject = [
    { name: 'commonName', value: 'localhost' },
    { name: 'organizationName', value: `LMS local stack ${randomUUID()}` },
  ];
  const pems = await loadOrCreateCertificate(dir, 'tls', () => generate(subject, { algorithm: 'sha256' }));
  // The file holding cert, for NODE_EXTRA_CA_CERTS and clients' `ca` option.
  return { ...pems, certPath: path.resolve(dir, 'tls-cert.pem') };
}
