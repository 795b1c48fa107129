import { afterAll, describe, expect, it } from 'vitest';
import { startHostProcess, startStack } from '../../local/stack.js';
import { runCommand } from '../support/commands.js';
import { CLIENT_ID, HOME_TENANT, stack, stackAppSettings, token } from '../support/stack.js';

/** The app as Azure runs it: only the settings given, nothing embedded to fall back on. */
async function hostWith(environment: Record<string, string>) {
  const lines: string[] = [];
  const host = await startHostProcess({ port: 0, environment, extraCaCerts: stack.caCertPath, hostOutput: (line) => lines.push(line) });
  hosts.push(host);
  return { url: `http://127.0.0.1:${host.port}/api`, lines };
}

const hosts: { stop(): Promise<void> }[] = [];
afterAll(async () => {
  for (const host of hosts) await host.stop();
});

describe('a deployment with settings missing fails closed', () => {
  it('refuses every request, and says in the log which settings are missing, when auth is not configured', async () => {
    const { url, lines } = await hostWith({});
    for (const path of ['/projects', '/projects/PRJ-1001']) {
      const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${await token({ roles: ['LMS.Admin'] })}` } });
      expect(response.status).toBe(500);
      expect(await response.json()).toMatchObject({ error: 'Server Error', status: 500, message: expect.stringContaining('not configured') });
    }
    await expect.poll(() => lines.join('\n')).toMatch(/AUTH_TENANT_ID is not set; AUTH_CLIENT_ID is not set/);
  });

  it('refuses requests when the database is not configured, instead of using any local store', async () => {
    const { url, lines } = await hostWith({
      AUTH_TENANT_ID: HOME_TENANT,
      AUTH_CLIENT_ID: CLIENT_ID,
      AUTH_AUTHORITY_HOST: stack.authorityHost,
    });
    const response = await fetch(`${url}/projects`, { headers: { authorization: `Bearer ${await token({ roles: ['LMS.Admin'] })}` } });
    expect(response.status).toBe(500);
    await expect.poll(() => lines.join('\n')).toMatch(/COSMOS_CONNECTION \(or COSMOS_CONNECTION__accountEndpoint\) is not set; COSMOS_DATABASE is not set/);
  });

  it('says at start, before any request, what is wrong: here WEBHOOKS_ALLOW_LOOPBACK set in Azure', async () => {
    const azure = { ...stackAppSettings, AzureWebJobsStorage: stack.storageConnectionString, WEBSITE_INSTANCE_ID: 'lms-api-instance-1' };
    const { lines } = await hostWith({ ...azure, WEBHOOKS_ALLOW_LOOPBACK: 'true' });
    await expect
      .poll(() => lines.join('\n'))
      .toMatch(/Configuration error: the app is not configured: WEBHOOKS_ALLOW_LOOPBACK=true is for a developer's machine and must not be set in Azure/);
    expect(lines.join('\n')).not.toMatch(/\] (GET|POST) /);
  });

  it("refuses the contract's COSMOS_ENDPOINT and COSMOS_KEY, which the app replaced: at start, in the log, and on every request", async () => {
    const { url, lines } = await hostWith({ ...stackAppSettings, AzureWebJobsStorage: stack.storageConnectionString, COSMOS_ENDPOINT: 'https://a/' });
    await expect
      .poll(() => lines.join('\n'))
      .toMatch(/Configuration error: the app is not configured: COSMOS_ENDPOINT is retired: set COSMOS_CONNECTION as AccountEndpoint=/);
    const response = await fetch(`${url}/projects`, { headers: { authorization: `Bearer ${await token({ roles: ['LMS.Admin'] })}` } });
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ error: 'Server Error', message: expect.stringContaining('not configured') });
  });

  it('refuses a malformed tenant id rather than guessing', async () => {
    const { url, lines } = await hostWith({ AUTH_TENANT_ID: 'contoso', AUTH_CLIENT_ID: CLIENT_ID, COSMOS_CONNECTION: stack.cosmosConnectionString });
    const response = await fetch(`${url}/projects`, { headers: { authorization: 'Bearer x.y.z' } });
    expect(response.status).toBe(500);
    await expect.poll(() => lines.join('\n')).toMatch(/AUTH_TENANT_ID is not a GUID/);
  });
});

describe('settings that are given replace the embedded parts', () => {
  it('runs no embedded part when auth and database settings are given, and uses those instead', async () => {
    const adminToken = await token({ roles: ['LMS.Admin'] });
    const created = await fetch(`${stack.apiBaseUrl}/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Seen through the given database' }),
    }).then((response) => response.json() as Promise<{ id: string }>);

    const lines: string[] = [];
    const second = await startStack({
      apiPort: 0,
      identityProviderPort: 0,
      settings: {
        ...stackAppSettings,
        AzureWebJobsStorage: stack.storageConnectionString,
        NODE_EXTRA_CA_CERTS: stack.caCertPath,
      },
      hostOutput: (line) => lines.push(line),
    });
    hosts.push({ stop: () => second.stop() });
    expect(second.embedded).toEqual([]);
    expect(second.identityProvider).toBeUndefined();
    const response = await fetch(`${second.apiBaseUrl}/projects/${created.id}`, { headers: { authorization: `Bearer ${adminToken}` } });
    expect(response.status, lines.join('\n')).toBe(200);
    expect(await response.json()).toMatchObject({ name: 'Seen through the given database' });
  });
});

describe('a database that cannot be reached', () => {
  it('is a 503 with Retry-After in the contract shape, not a 500', async () => {
    const { url, lines } = await hostWith({
      AUTH_TENANT_ID: HOME_TENANT,
      AUTH_CLIENT_ID: CLIENT_ID,
      AUTH_AUTHORITY_HOST: stack.authorityHost,
      COSMOS_CONNECTION: `AccountEndpoint=https://127.0.0.1:1/;AccountKey=${stack.cosmosKey};`,
      COSMOS_DATABASE: 'lms',
    });
    const response = await fetch(`${url}/projects/PRJ-1001`, { headers: { authorization: `Bearer ${await token({ roles: ['LMS.Admin'] })}` } });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await response.json()).toMatchObject({ error: 'Service Unavailable', status: 503 });
    // The host logs before it answers, but its output reaches this process through a pipe of its own.
    await expect.poll(() => lines.join('\n')).toMatch(/database unavailable/);
  });
});

describe("npm start given the contract's database settings", () => {
  it('refuses to start, in one line naming COSMOS_CONNECTION, rather than embed a database in their place', async () => {
    const started = await runCommand(process.execPath, ['dist/local/start.js'], {
      PORT: '0',
      LOCAL_IDP_PORT: '0',
      COSMOS_ENDPOINT: 'https://a/',
      COSMOS_KEY: 'k',
    });
    const instead = 'set COSMOS_CONNECTION as AccountEndpoint=…;AccountKey=…; (or, for a managed identity, COSMOS_CONNECTION__accountEndpoint) instead';
    expect([started.code, started.stderr]).toEqual([1, `Configuration error: COSMOS_ENDPOINT is retired: ${instead}; COSMOS_KEY is retired: ${instead}\n`]);
  });
});
