/**
 * Azurite's queue service over HTTPS with its basic OAuth, which identity-based connections need: it serves a TLS key pair the
 * test workers trust, from files of its own, which close() removes once Azurite has stopped.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzuriteQueue, type AzuriteQueue } from '../../local/storage/azurite.js';

export async function startOAuthAzurite(tls: { cert: string; key: string }): Promise<AzuriteQueue> {
  const folder = await mkdtemp(join(tmpdir(), 'oauth-azurite-'));
  const removeFiles = () => rm(folder, { recursive: true, force: true });
  try {
    const files = { certPath: join(folder, 'cert.pem'), keyPath: join(folder, 'key.pem') };
    await writeFile(files.certPath, tls.cert);
    await writeFile(files.keyPath, tls.key, { mode: 0o600 });
    const azurite = await startAzuriteQueue({ tls: files });
    return {
      ...azurite,
      close: async () => {
        await azurite.close();
        await removeFiles();
      },
    };
  } catch (error) {
    await removeFiles();
    throw error;
  }
}
