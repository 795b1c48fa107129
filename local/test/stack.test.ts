import { describe, expect, it } from 'vitest';
import { startStack } from '../stack.js';
import { stack, stackAppSettings } from '../../test/support/stack.js';
import { waitFor } from '../../test/support/wait.js';

const alive = (pid: number) => {
  try {
    return process.kill(pid, 0);
  } catch {
    return false;
  }
};

describe('the local stack', () => {
  it(
    'starts the Functions host again on its port when it dies (a crash, an out-of-memory kill), as Azure starts its worker again',
    { timeout: 90_000 },
    async () => {
      const lines: string[] = [];
      const settings = { ...stackAppSettings, AzureWebJobsStorage: stack.storageConnectionString, NODE_EXTRA_CA_CERTS: stack.caCertPath };
      const own = await startStack({ apiPort: 0, identityProviderPort: 0, settings, hostOutput: (line) => lines.push(line) });
      try {
        const killed = own.hostPid;
        process.kill(killed, 'SIGKILL');
        await waitFor(() => own.hostPid !== killed && alive(own.hostPid), 30_000);
        await waitFor(async () => (await fetch(`${own.apiBaseUrl}/openapi.json`).catch(() => undefined))?.status === 200, 30_000);
      } finally {
        await own.stop();
      }
      expect(alive(own.hostPid)).toBe(false);
    },
  );
});
