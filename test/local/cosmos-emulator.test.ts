import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCosmosEmulator } from '../../local/cosmos-emulator.js';
import { loadOrCreateTlsCertificate, type TlsCertificate } from '../../local/tls.js';

describe('the embedded Cosmos DB', () => {
  let folder: string;
  let tls: TlsCertificate;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cosmos-emulator-test-'));
    tls = await loadOrCreateTlsCertificate(join(folder, 'tls'));
  });
  afterAll(() => rm(folder, { recursive: true, force: true }));

  const start = () => startCosmosEmulator({ port: 0, host: '127.0.0.1', database: 'lms', tls, snapshotFile: join(folder, 'cosmos', 'data.json') });

  it('creates the containers the app needs and keeps their data across a restart', async () => {
    const first = await start();
    expect(first.restored).toBe(0);
    const projects = first.client.database('lms').container('tenant-data');
    await projects.items.create({ id: 'PRJ-1001', tenantId: 't1', type: 'project', name: 'Kept' });
    await projects.items.create({ id: 'PRJ-1001', tenantId: 't2', type: 'project', name: 'Other tenant' });
    await first.close();

    const second = await start();
    try {
      expect(second.restored).toBe(2);
      const { resource } = await second.client.database('lms').container('tenant-data').item('PRJ-1001', 't1').read();
      expect(resource).toMatchObject({ name: 'Kept', tenantId: 't1' });
      const { resource: other } = await second.client.database('lms').container('tenant-data').item('PRJ-1001', 't2').read();
      expect(other).toMatchObject({ name: 'Other tenant' });
    } finally {
      await second.close();
    }
  });
});
