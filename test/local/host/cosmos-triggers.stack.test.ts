/**
 * Cosmos DB triggers of one app in two local host processes sharing the leases: a range is worked on by one at a
 * time, and moves to the other when its holder stops or dies.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Container } from '@azure/cosmos';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { CosmosEmulator } from '../../../local/cosmos/emulator.js';
import { startHostProcess } from '../../../local/stack.js';
import { waitFor } from '../../support/wait.js';
import { temporaryEmulators } from '../../support/temporary-emulators.js';

const emulators = temporaryEmulators('cosmos-triggers-hosts-test', { tls: inject('trustedTls') });
let emulator: CosmosEmulator;

beforeAll(async () => {
  emulator = await emulators.start();
});

/** A container of its own, so that no test sees another's changes. */
async function monitored(): Promise<Container> {
  const { container } = await emulator.client
    .database('lms')
    .containers.create({ id: `items-${Math.random().toString(36).slice(2, 10)}`, partitionKey: { paths: ['/tenantId'] } });
  return container;
}

describe('Cosmos DB triggers of one app in two local host processes', () => {
  const require = createRequire(import.meta.url);
  let appFolder: string;
  let container: Container;

  beforeAll(async () => {
    // An app of its own: one function that appends each document it is given, with its host's name, to a file.
    appFolder = join(emulators.folder, 'app');
    await mkdir(appFolder, { recursive: true });
    container = await monitored();
    await writeFile(join(appFolder, 'host.json'), JSON.stringify({ version: '2.0' }));
    await writeFile(join(appFolder, 'package.json'), JSON.stringify({ name: 'two-hosts', type: 'module', main: 'index.js' }));
    // The app lives outside this repository, so it imports @azure/functions by path: the same module the host loads.
    const functionsUrl = pathToFileURL(require.resolve('@azure/functions')).href;
    await writeFile(
      join(appFolder, 'index.js'),
      `import { appendFileSync } from 'node:fs';
       import { app } from '${functionsUrl}';
       app.cosmosDB('changes', {
         connection: 'TestCosmos', databaseName: 'lms', containerName: ${JSON.stringify(container.id)}, leaseContainerName: 'leases',
         startFromBeginning: true, feedPollDelay: 100, leaseAcquireInterval: 500, leaseExpirationInterval: 3000, leaseRenewInterval: 500,
         handler: (documents) => {
           for (const document of documents) appendFileSync(process.env.HANDED_OVER, process.env.HOST_NAME + ' ' + document.id + '\\n');
         },
       });`,
    );
  });

  const handedOver = (): { host: string; id: string }[] => {
    try {
      return readFileSync(join(emulators.folder, 'handed-over.log'), 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => ({ host: line.split(' ')[0]!, id: line.split(' ')[1]! }));
    } catch {
      return [];
    }
  };

  async function host(name: string) {
    return startHostProcess({
      port: 0,
      appRoot: appFolder,
      environment: { TestCosmos: emulator.connectionString, HANDED_OVER: join(emulators.folder, 'handed-over.log'), HOST_NAME: name },
      extraCaCerts: inject('trustedTls').certPath,
      hostOutput: (line) => appendFileSync(join(emulators.folder, `${name}.log`), `${line}\n`),
    });
  }

  it('hand each change to one host; a stopped host lets the other take over at once, a killed one once its lease expires', { timeout: 60_000 }, async () => {
    const first = await host('first');
    const second = await host('second');
    expect(first.cosmosFunctions).toEqual([{ name: 'changes', container: container.id, leaseContainer: 'leases' }]);
    for (let index = 0; index < 20; index++) await container.items.create({ id: `a-${index}`, tenantId: `t${index % 3}` });
    await waitFor(() => handedOver().length >= 20);
    const holder = handedOver()[0]!.host;
    // One range, one lease: one host had all of it.
    expect(new Set(handedOver().map((entry) => entry.host))).toEqual(new Set([holder]));
    const [holding, other] = holder === 'first' ? [first, second] : [second, first];
    const { resource: monitoredContainer } = await container.read();
    const owner = async () => {
      const { resources } = await emulator.client
        .database('lms')
        .container('leases')
        .items.query<{ Owner: string | null }>({
          query: 'SELECT c.Owner FROM c WHERE ENDSWITH(c.id, @suffix)',
          parameters: [{ name: '@suffix', value: `_${monitoredContainer!._rid}..0` }],
        })
        .fetchAll();
      return resources[0]!.Owner;
    };
    const ownerBeforeStop = await owner();
    await holding.stop();
    // Released as it stopped, not left to expire: free now, or the other host's already.
    expect(await owner()).not.toBe(ownerBeforeStop);
    await container.items.create({ id: 'after-stop', tenantId: 't0' });
    await waitFor(() => handedOver().some((entry) => entry.id === 'after-stop'));
    expect(handedOver().find((entry) => entry.id === 'after-stop')!.host).not.toBe(holder);
    // The other host now dies without releasing its lease: a third takes over once the lease expires, from the checkpoint.
    const third = await host('third');
    process.kill(other.pid, 'SIGKILL');
    await container.items.create({ id: 'after-kill', tenantId: 't1' });
    await waitFor(() => handedOver().some((entry) => entry.id === 'after-kill'), 20_000);
    expect(handedOver().find((entry) => entry.id === 'after-kill')!.host).toBe('third');
    const ids = handedOver().map((entry) => entry.id);
    expect(ids.filter((id) => id.startsWith('a-')).sort()).toEqual(Array.from({ length: 20 }, (_, index) => `a-${index}`).sort());
    expect(new Set(ids).size).toBe(ids.length);
    await third.stop();
  });
});
