/**
 * The embedded Cosmos DBs of a test file: a temporary folder of the file's own, a TLS certificate made
 * in it (unless one is given), and every emulator started here closed when the file is done, or with
 * `closeAfterEach` when each test is.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startCosmosEmulator, type CosmosEmulator, type CosmosEmulatorOptions } from '../../local/cosmos/emulator.js';
import { loadOrCreateTlsCertificate, type TlsCertificate } from '../../local/tls.js';

export interface TemporaryEmulators {
  /** The file's own folder, removed when the file is done. */
  readonly folder: string;
  readonly tls: TlsCertificate;
  /** An emulator of the database `lms` on a free port, kept in `dataDir` when given (else in memory), with any other options given. */
  start(dataDir?: string, options?: Pick<CosmosEmulatorOptions, 'purgeInterval'>): Promise<CosmosEmulator>;
  /** Closes an emulator started here before the test is done, as a restart does: the one given, else the last started. */
  close(emulator?: CosmosEmulator): Promise<void>;
}

export function temporaryEmulators(name: string, options: { tls?: TlsCertificate; closeAfterEach?: boolean } = {}): TemporaryEmulators {
  let folder: string | undefined;
  let tls = options.tls;
  const running: CosmosEmulator[] = [];
  const closeAll = async () => {
    for (const emulator of running.splice(0)) await emulator.close();
  };

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), `${name}-`));
    tls ??= await loadOrCreateTlsCertificate(join(folder, 'tls'));
  });
  if (options.closeAfterEach) afterEach(closeAll);
  afterAll(async () => {
    await closeAll();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  return {
    get folder() {
      if (!folder) throw new Error('The temporary folder is made in beforeAll.');
      return folder;
    },
    get tls() {
      if (!tls) throw new Error('The TLS certificate is made in beforeAll.');
      return tls;
    },
    async start(dataDir, more) {
      const emulator = await startCosmosEmulator({ port: 0, host: '127.0.0.1', database: 'lms', tls: this.tls, ...(dataDir ? { dataDir } : {}), ...more });
      running.push(emulator);
      return emulator;
    },
    async close(emulator = running.at(-1)) {
      const index = emulator ? running.indexOf(emulator) : -1;
      if (index < 0) throw new Error('That emulator was not started here, or is closed already.');
      await running.splice(index, 1)[0]!.close();
    },
  };
}
