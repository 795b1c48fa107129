/**
 * Key material of the embedded parts: one TLS certificate for localhost and 127.0.0.1, served by the
 * identity provider and the Cosmos emulator, and PEM pairs kept on disk so that a restart of `npm start`
 * keeps certificates (and so tokens) valid.
 */
import { randomUUID, X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { generate as generateCertificate } from 'selfsigned';

export const CERTIFICATE_VALIDITY_DAYS = 825;
const TLS_CERT_FILE = 'tls-cert.pem';

export interface PemPair {
  cert: string;
  key: string;
}

export interface TlsCertificate extends PemPair {
  /** File holding cert, for NODE_EXTRA_CA_CERTS and clients' `ca` option. */
  certPath: string;
}

export const daysFromNow = (days: number): Date => new Date(Date.now() + days * 24 * 60 * 60 * 1000);

export const isFileMissing = (error: unknown): boolean => (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';

/** Reads a certificate and its key from dir unless missing or about to expire; otherwise creates and stores new ones. */
export async function loadOrCreatePemPair(dir: string | undefined, certFile: string, keyFile: string, create: () => Promise<PemPair>): Promise<PemPair> {
  if (!dir) return create();
  const certPath = path.join(dir, certFile);
  const keyPath = path.join(dir, keyFile);
  try {
    const stored = { cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8') };
    if (new Date(new X509Certificate(stored.cert).validTo) > daysFromNow(1)) return stored;
  } catch (error) {
    if (!isFileMissing(error)) throw error;
  }
  const created = await create();
  await mkdir(dir, { recursive: true });
  await writeFile(keyPath, created.key, { mode: 0o600 });
  await writeFile(certPath, created.cert);
  return created;
}

async function createTlsCertificate(): Promise<PemPair> {
  // A subject of its own: TLS clients find the issuer by name, so two stacks' certificates trusted side by side must not share one.
  const subject = [
    { name: 'commonName', value: 'localhost' },
    { name: 'organizationName', value: `LMS local stack ${randomUUID()}` },
  ];
  const pems = await generateCertificate(subject, {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: daysFromNow(CERTIFICATE_VALIDITY_DAYS),
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

/** The certificate kept in dir, or a new one stored there. */
export async function loadOrCreateTlsCertificate(dir: string): Promise<TlsCertificate> {
  const pems = await loadOrCreatePemPair(dir, TLS_CERT_FILE, 'tls-key.pem', createTlsCertificate);
  return { ...pems, certPath: path.resolve(dir, TLS_CERT_FILE) };
}
