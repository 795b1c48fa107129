/**
 * What `npm start` checks before it builds (local/start/options.ts, from the sources, in tools/before-start.mjs):
 * local.settings.json as `func start` reads it, with the line and column of a mistake, a value of the wrong type or
 * a misspelled setting named; Host.LocalHttpPort honoured as func honours it; a database that cannot be reached a
 * message within seconds. Each is a StartError: `npm start` prints its message alone.
 */
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { appRoot, closedPort, heldPort, runCommand } from '../../support/commands.js';
import { temporaryEmulators } from '../../support/temporary-emulators.js';
import { EMULATOR_KEY } from '../../../local/cosmos/emulator.js';
import { StartError } from '../../../local/ports.js';
import { startOptions } from '../../../local/start/options.js';

let root: string;
let held: Awaited<ReturnType<typeof heldPort>>;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'lms-start-options-'));
  held = await heldPort();
});
afterAll(async () => {
  await held.release();
  await rm(root, { recursive: true, force: true });
});

/** The environment of a start on ports of its own (any free one), nothing else set. */
const FREE = { PORT: '0', LOCAL_IDP_PORT: '0' };

/** What `npm start` says of this local.settings.json: its options, or the message it stops with. */
async function startWith(localSettings: string, environment: Record<string, string> = FREE) {
  await writeFile(join(root, 'local.settings.json'), localSettings);
  try {
    return await startOptions(root, environment);
  } catch (error) {
    if (error instanceof StartError) return error.message;
    throw error;
  }
}

describe('local.settings.json', () => {
  it('that is not JSON is told with its line and column, the line and a mark under the place', async () => {
    const trailingComma = '{\n  "IsEncrypted": false,\n  "Values": {\n    "AUTH_TENANT_ID": "6f1c2a4e-3b5d-4c7e-9a10-1b2c3d4e5f60",\n  }\n}\n';
    expect(await startWith(trailingComma)).toBe(
      'local.settings.json, line 5, column 3: not valid JSON, unexpected "}" after a comma, which JSON does not allow there\n  5 |   }\n    |   ^',
    );
    expect(await startWith('{ "Values": { "COSMOS_DATABASE": "lms" ')).toMatch(
      /^local\.settings\.json, line 1, column \d+: not valid JSON, the file ends before the JSON does\n/,
    );
  });

  it('names a value that is not a string, and a field of the wrong type, each with its place, all at once', async () => {
    const file = [
      '{',
      '  "Values": {',
      '    "WEBHOOKS_RETRY_SCHEDULE": "5s,5m",',
      '    "LOCAL_QUEUE_MESSAGE_LEASE": 600,',
      '    "WEBHOOKS_ALLOW_LOOPBACK": true',
      '  },',
      '  "Host": { "CORSCredentials": "yes" }',
      '}',
    ].join('\n');
    expect(await startWith(file)).toBe(
      [
        'local.settings.json has 3 mistakes:',
        '  line 4, column 34: Values.LOCAL_QUEUE_MESSAGE_LEASE is a number: every value in Values is a string, as in "LOCAL_QUEUE_MESSAGE_LEASE": "…"',
        '  line 5, column 32: Values.WEBHOOKS_ALLOW_LOOPBACK is true or false: every value in Values is a string, as in "WEBHOOKS_ALLOW_LOOPBACK": "…"',
        '  line 7, column 32: Host.CORSCredentials is a string, not true or false',
      ].join('\n'),
    );
  });

  it('names a setting the app does not have, with the one it is nearest to, from the one list of settings', async () => {
    const file = [
      '{',
      '  "Values": {',
      '    "AUTH_TENANTID": "6f1c2a4e-3b5d-4c7e-9a10-1b2c3d4e5f60",',
      '    "COSMOS_DATABSE": "lms",',
      '    "WIDGET_COLOUR": "blue"',
      '  },',
      '  "Host": { "LocalHTTPPort": 7081 },',
      '  "Value": {}',
      '}',
    ].join('\n');
    expect(await startWith(file)).toBe(
      [
        'local.settings.json has 5 mistakes:',
        '  line 3, column 5: Values.AUTH_TENANTID is not a setting of this app (docs/configuration.md lists them): did you mean AUTH_TENANT_ID?',
        '  line 4, column 5: Values.COSMOS_DATABSE is not a setting of this app (docs/configuration.md lists them): did you mean COSMOS_DATABASE?',
        '  line 5, column 5: Values.WIDGET_COLOUR is not a setting of this app (docs/configuration.md lists them)',
        '  line 7, column 13: Host.LocalHTTPPort is not a field func reads in Host: did you mean LocalHttpPort?',
        '  line 8, column 3: Value is not a part of local.settings.json: did you mean Values?',
      ].join('\n'),
    );
  });

  it("takes what the Functions host and Node.js read, and identity-based connections' parts, as func hands them on", async () => {
    const values = {
      FUNCTIONS_WORKER_RUNTIME: 'node',
      AzureWebJobsFeatureFlags: 'EnableWorkerIndexing',
      'AzureWebJobs.webhooks-sweep.Disabled': 'true',
      NODE_OPTIONS: '--max-old-space-size=2048',
      AzureWebJobsStorage: 'UseDevelopmentStorage=true',
      COSMOS_DATABASE: 'lms',
      WEBHOOKS_ALLOW_LOOPBACK: '',
    };
    const options = await startWith(JSON.stringify({ IsEncrypted: false, Values: values, Host: { CORS: 'http://localhost:3000', CORSCredentials: false } }));
    expect(options).toMatchObject({ settings: { ...values, CORS_ALLOWED_ORIGINS: 'http://localhost:3000', CORS_SUPPORT_CREDENTIALS: 'false' } });
  });

  it('refuses a setting that is read from the environment only, saying how to give it', async () => {
    expect(await startWith('{ "Values": { "PORT": "7081" } }')).toBe(
      'local.settings.json has a mistake:\n  line 1, column 15: Values.PORT is read from the environment only (PORT=… npm start, or Host.LocalHttpPort here)',
    );
  });

  it('serves the API on Host.LocalHttpPort, as `func start` does, unless PORT says otherwise', async () => {
    const file = '{ "Host": { "LocalHttpPort": 7181 } }';
    expect(await startWith(file, { LOCAL_IDP_PORT: '0' })).toMatchObject({ apiPort: 7181 });
    expect(await startWith(file, FREE)).toMatchObject({ apiPort: 0 });
    expect(await startWith(`{ "Host": { "LocalHttpPort": ${held.port} } }`, { LOCAL_IDP_PORT: '0' })).toMatch(
      new RegExp(`^In use already .*: port ${held.port}, the API's \\(Host\\.LocalHttpPort of local\\.settings\\.json, which PORT overrides\\)\\.\\n`),
    );
    expect(await startWith('{ "Host": { "LocalHttpPort": 70710 } }')).toBe(
      'local.settings.json has a mistake:\n  Host.LocalHttpPort is 70710, not a port number (1 to 65535)',
    );
  });
});

describe('a database that is given', () => {
  const emulators = temporaryEmulators('start-options-test', { tls: inject('trustedTls') });

  it('that cannot be reached stops the start at once, naming the setting and the account', async () => {
    const unresolvable = `AccountEndpoint=https://lms-account.invalid/;AccountKey=${EMULATOR_KEY};`;
    expect(await startWith(JSON.stringify({ Values: { COSMOS_CONNECTION: unresolvable } }))).toMatch(
      new RegExp(
        "^The database of COSMOS_CONNECTION, https://lms-account\\.invalid, cannot be reached \\((ENOTFOUND|EAI_AGAIN)\\): check the account's name, " +
          "this machine's network \\(a VPN, a firewall\\), or that the emulator runs\\. Without the setting, `npm start` embeds a database of its own\\.$",
      ),
    );
    const closed = `AccountEndpoint=https://127.0.0.1:${await closedPort()}/;AccountKey=${EMULATOR_KEY};`;
    expect(await startWith('{}', { ...FREE, COSMOS_CONNECTION: closed })).toMatch(
      /^The database of COSMOS_CONNECTION, https:\/\/127\.0\.0\.1:\d+, cannot be reached \(ECONNREFUSED\)/,
    );
  });

  it('that answers is used as given', async () => {
    const { connectionString } = await emulators.start();
    expect(await startWith('{}', { ...FREE, COSMOS_CONNECTION: connectionString })).toMatchObject({
      settings: { COSMOS_CONNECTION: connectionString },
    });
  });
});

describe('npm start with a local.settings.json that is wrong', () => {
  it('says so before it builds anything', async () => {
    // A checkout of its own with no dist/ at all: a build would show, and would change nothing of this one.
    const checkout = join(root, 'checkout');
    await mkdir(join(checkout, 'tools'), { recursive: true });
    for (const file of ['package.json', 'host.json', 'tools/before-start.mjs', 'tools/load-source.mjs'])
      await copyFile(join(appRoot, file), join(checkout, file));
    for (const folder of ['local', 'shared', 'node_modules']) await symlink(join(appRoot, folder), join(checkout, folder));
    await symlink(join(appRoot, 'tools', 'built-from.ts'), join(checkout, 'tools', 'built-from.ts'));
    await writeFile(join(checkout, 'local.settings.json'), '{\n  "Values": {\n    "AUTH_TENANTID": "x"\n  }\n}\n');
    const started = await runCommand('npm', ['start', '--prefix', checkout], FREE);
    expect(started.code).toBe(1);
    expect(started.stderr).toContain(
      'local.settings.json has a mistake:\n' +
        '  line 3, column 5: Values.AUTH_TENANTID is not a setting of this app (docs/configuration.md lists them): did you mean AUTH_TENANT_ID?\n',
    );
    expect(started.stdout).not.toMatch(/> (build|compile)/);
  });
});
