import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  readAuthSettings,
  readCosmosSettings,
  readCursorSigningKey,
  readEmbeddingsSettings,
  readGraphSettings,
  parseRetrySchedule,
  readOnBehalfOfCredential,
  readQueueSettings,
  readWebhookSettings,
} from '../../../shared/settings/read.js';
import { ConfigurationError } from '../../../shared/errors.js';
import { SETTINGS } from '../../../shared/settings/catalog.js';

/** The problems a settings reader names, or none when it reads them. */
function problemsOf(read: () => unknown): string[] {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as ConfigurationError).problems;
  }
  return [];
}

const TENANT = '6f1c2a4e-3b5d-4c7e-9a10-1b2c3d4e5f60';
const OTHER = '9e8d7c6b-5a49-4382-8716-0f1e2d3c4b5a';

describe('auth settings', () => {
  it('derives audiences, allowed tenants and the authority host', () => {
    const settings = readAuthSettings({ AUTH_TENANT_ID: TENANT.toUpperCase(), AUTH_CLIENT_ID: 'abc', AUTH_AUDIENCES: 'api://teams.example/abc, extra ' });
    expect(settings).toEqual({
      homeTenantId: TENANT,
      allowedTenants: [TENANT],
      clientId: 'abc',
      audiences: ['api://abc', 'abc', 'api://teams.example/abc', 'extra'],
      authorityHost: 'https://login.microsoftonline.com',
      defaultRole: undefined,
    });
  });

  it('accepts an allow-list of tenants, another authority host and a default role', () => {
    const settings = readAuthSettings({
      AUTH_TENANT_ID: TENANT,
      AUTH_CLIENT_ID: 'abc',
      AUTH_ALLOWED_TENANTS: `${TENANT},${OTHER}`,
      AUTH_AUTHORITY_HOST: 'https://login.microsoftonline.us/',
      AUTH_DEFAULT_ROLE: 'LMS.Reader',
    });
    expect(settings.allowedTenants).toEqual([TENANT, OTHER]);
    expect(settings.authorityHost).toBe('https://login.microsoftonline.us');
    expect(settings.defaultRole).toBe('LMS.Reader');
  });

  it('lists every problem at once instead of falling back', () => {
    try {
      readAuthSettings({ AUTH_ALLOWED_TENANTS: 'contoso', AUTH_DEFAULT_ROLE: 'Admin', AUTH_AUTHORITY_HOST: 'http://login.example' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).problems).toEqual([
        'AUTH_TENANT_ID is not set',
        'AUTH_CLIENT_ID is not set',
        'AUTH_ALLOWED_TENANTS has "contoso", which is not a GUID',
        'AUTH_DEFAULT_ROLE "Admin" is not one of the app roles',
        'AUTH_AUTHORITY_HOST must be an https URL',
      ]);
    }
  });
});

describe('settings pasted with spaces around, or left blank', () => {
  /** Each value with spaces around it, as a setting pasted with them. */
  const padded = (settings: Record<string, string>) => Object.fromEntries(Object.entries(settings).map(([name, value]) => [name, ` ${value} `]));
  const leftBlank = (names: string[]) => Object.fromEntries(names.map((name) => [name, ' ']));

  /** A reader, settings it reads, and settings left blank beside them, which must read as not set. */
  interface Pasted {
    reader: string;
    read: (env: NodeJS.ProcessEnv) => unknown;
    set: Record<string, string>;
    blank: string[];
  }

  it.each<Pasted>([
    {
      reader: 'auth',
      read: readAuthSettings,
      set: { AUTH_TENANT_ID: TENANT, AUTH_CLIENT_ID: 'abc', AUTH_DEFAULT_ROLE: 'LMS.Reader' },
      blank: ['AUTH_AUTHORITY_HOST'],
    },
    { reader: 'Graph', read: readGraphSettings, set: {}, blank: ['GRAPH_BASE_URL', 'GRAPH_RESOURCE'] },
    {
      reader: 'queue (a service URI)',
      read: readQueueSettings,
      set: { AzureWebJobsStorage__queueServiceUri: 'https://acct.queue.core.windows.net', RAG_QUEUE_NAME: 'rag', WEBHOOKS_QUEUE_NAME: 'hooks' },
      blank: ['AzureWebJobsStorage', 'AzureWebJobsStorage__clientId'],
    },
    {
      reader: 'queue (a user-assigned identity)',
      read: readQueueSettings,
      set: { AzureWebJobsStorage__queueServiceUri: 'https://q', AzureWebJobsStorage__clientId: 'c2' },
      blank: [],
    },
    { reader: 'queue (a connection string)', read: readQueueSettings, set: { AzureWebJobsStorage: 'UseDevelopmentStorage=true' }, blank: [] },
    {
      reader: 'Cosmos (an account endpoint)',
      read: readCosmosSettings,
      set: { COSMOS_CONNECTION__accountEndpoint: 'https://acct.documents.azure.com/', COSMOS_DATABASE: 'lms' },
      blank: ['COSMOS_CONNECTION'],
    },
    {
      reader: 'Cosmos (a connection string)',
      read: readCosmosSettings,
      set: { COSMOS_CONNECTION: 'AccountEndpoint=https://a/;AccountKey=k;', COSMOS_DATABASE: 'lms' },
      blank: [],
    },
    { reader: 'webhook', read: readWebhookSettings, set: { WEBHOOKS_ALLOW_LOOPBACK: 'true' }, blank: ['WEBSITE_INSTANCE_ID'] },
    {
      reader: 'On-Behalf-Of (a certificate)',
      read: readOnBehalfOfCredential,
      set: { AUTH_CLIENT_CERTIFICATE_PATH: '/keys/obo.pem' },
      blank: ['AUTH_CLIENT_SECRET'],
    },
    { reader: 'On-Behalf-Of (a secret)', read: readOnBehalfOfCredential, set: { AUTH_CLIENT_SECRET: 's3cret' }, blank: ['AUTH_CLIENT_CERTIFICATE_PATH'] },
    {
      reader: 'On-Behalf-Of (a managed identity)',
      read: readOnBehalfOfCredential,
      set: { AUTH_MANAGED_IDENTITY_CLIENT_ID: 'c3' },
      blank: ['AUTH_CLIENT_SECRET', 'AUTH_CLIENT_CERTIFICATE_PATH'],
    },
  ])('$reader: read as without the spaces; a blank one is one not set', ({ read, set, blank }) => {
    expect(read({ ...padded(set), ...leftBlank(blank) })).toEqual(read(set));
  });

  it('refuse a tenant that is not a GUID and an authority host or Graph URL that is not a URL', () => {
    const malformed = { AUTH_TENANT_ID: 'contoso.onmicrosoft.com', AUTH_CLIENT_ID: 'abc', AUTH_AUTHORITY_HOST: 'login.example' };
    expect(problemsOf(() => readAuthSettings(malformed))).toEqual(['AUTH_TENANT_ID is not a GUID', 'AUTH_AUTHORITY_HOST is not a URL']);
    expect(problemsOf(() => readGraphSettings({ GRAPH_BASE_URL: 'graph.microsoft.com' }))).toEqual(['GRAPH_BASE_URL is not a URL']);
  });
});

describe("On-Behalf-Of's client credential", () => {
  it("is a secret, a certificate file or a managed identity's assertion, one of them: two or none is a configuration error", () => {
    expect(readOnBehalfOfCredential({ AUTH_CLIENT_SECRET: 's3cret' })).toEqual({ secret: 's3cret' });
    expect(readOnBehalfOfCredential({ AUTH_CLIENT_CERTIFICATE_PATH: '/keys/obo.pem' })).toEqual({ certificatePath: '/keys/obo.pem' });
    expect(readOnBehalfOfCredential({ AUTH_MANAGED_IDENTITY_CLIENT_ID: 'c3' })).toEqual({ managedIdentityClientId: 'c3' });
    const all = 'AUTH_CLIENT_SECRET, AUTH_CLIENT_CERTIFICATE_PATH, AUTH_MANAGED_IDENTITY_CLIENT_ID';
    expect(problemsOf(() => readOnBehalfOfCredential({ AUTH_CLIENT_SECRET: 's3cret', AUTH_CLIENT_CERTIFICATE_PATH: '/keys/obo.pem' }))).toEqual([
      `set one of ${all}, not AUTH_CLIENT_SECRET and AUTH_CLIENT_CERTIFICATE_PATH`,
    ]);
    expect(problemsOf(() => readOnBehalfOfCredential({ AUTH_CLIENT_SECRET: 's3cret', AUTH_MANAGED_IDENTITY_CLIENT_ID: 'c3' }))).toEqual([
      `set one of ${all}, not AUTH_CLIENT_SECRET and AUTH_MANAGED_IDENTITY_CLIENT_ID`,
    ]);
    expect(problemsOf(() => readOnBehalfOfCredential({}))).toEqual([`${all}: none is set (On-Behalf-Of needs one)`]);
  });
});

describe("the cursors' signing key", () => {
  it('is at least 32 bytes of base64; missing, blank or shorter is a configuration error', () => {
    const key = Buffer.alloc(32, 7);
    expect(readCursorSigningKey({ CURSOR_SIGNING_KEY: ` ${key.toString('base64')} ` })).toEqual(key);
    for (const value of [undefined, '  ']) {
      expect(problemsOf(() => readCursorSigningKey({ CURSOR_SIGNING_KEY: value }))).toEqual([
        'CURSOR_SIGNING_KEY is not set (at least 32 random bytes, base64)',
      ]);
    }
    expect(problemsOf(() => readCursorSigningKey({ CURSOR_SIGNING_KEY: key.subarray(1).toString('base64') }))).toEqual([
      'CURSOR_SIGNING_KEY must hold at least 32 bytes, base64-encoded',
    ]);
  });
});

describe('Cosmos settings', () => {
  it("reads the change feed trigger's connection: a connection string with a key, or an account endpoint for the managed identity", () => {
    const connectionString = 'AccountEndpoint=https://acct.documents.azure.com:443/;AccountKey=a2V5;';
    expect(readCosmosSettings({ COSMOS_CONNECTION: connectionString, COSMOS_DATABASE: 'lms' })).toEqual({ connection: { connectionString }, database: 'lms' });
    expect(readCosmosSettings({ COSMOS_CONNECTION__accountEndpoint: 'https://acct.documents.azure.com:443/', COSMOS_DATABASE: 'lms' })).toEqual({
      connection: { accountEndpoint: 'https://acct.documents.azure.com:443/', managedIdentity: false, clientId: undefined },
      database: 'lms',
    });
    expect(
      readCosmosSettings({
        COSMOS_CONNECTION__accountEndpoint: 'https://acct.documents.azure.com:443/',
        COSMOS_CONNECTION__clientId: 'c1',
        COSMOS_CONNECTION__credential: 'ManagedIdentity',
        COSMOS_DATABASE: 'd',
      }).connection,
    ).toEqual({ accountEndpoint: 'https://acct.documents.azure.com:443/', managedIdentity: true, clientId: 'c1' });
  });

  const problems = (env: Record<string, string>) => problemsOf(() => readCosmosSettings(env));

  it('fails closed on a missing or malformed connection and a missing database, naming each problem', () => {
    expect(problems({})).toEqual(['COSMOS_CONNECTION (or COSMOS_CONNECTION__accountEndpoint) is not set', 'COSMOS_DATABASE is not set']);
    expect(problems({ COSMOS_CONNECTION: 'https://acct.documents.azure.com/', COSMOS_DATABASE: 'lms' })).toEqual([
      'COSMOS_CONNECTION is not a connection string with an https AccountEndpoint',
    ]);
    expect(problems({ COSMOS_CONNECTION: 'AccountEndpoint=https://acct.documents.azure.com/;', COSMOS_DATABASE: 'lms' })).toEqual([
      'COSMOS_CONNECTION has no AccountKey (with a managed identity, set COSMOS_CONNECTION__accountEndpoint instead)',
    ]);
    expect(problems({ COSMOS_CONNECTION__accountEndpoint: 'http://acct.documents.azure.com/', COSMOS_DATABASE: 'lms' })).toEqual([
      'COSMOS_CONNECTION__accountEndpoint must be an https URL',
    ]);
    expect(
      problems({ COSMOS_CONNECTION: 'AccountEndpoint=https://a/;AccountKey=k;', COSMOS_CONNECTION__accountEndpoint: 'https://a/', COSMOS_DATABASE: 'lms' }),
    ).toEqual(['set COSMOS_CONNECTION or COSMOS_CONNECTION__accountEndpoint, not both']);
  });

  it("refuses the contract's retired COSMOS_ENDPOINT and COSMOS_KEY, given with or without the connection, naming what replaces them", () => {
    const instead = 'set COSMOS_CONNECTION as AccountEndpoint=…;AccountKey=…; (or, for a managed identity, COSMOS_CONNECTION__accountEndpoint) instead';
    const connection = { COSMOS_CONNECTION: 'AccountEndpoint=https://a/;AccountKey=k;', COSMOS_DATABASE: 'lms' };
    expect(problems({ ...connection, COSMOS_ENDPOINT: 'https://a/' })).toEqual([`COSMOS_ENDPOINT is retired: ${instead}`]);
    expect(problems({ COSMOS_ENDPOINT: 'https://a/', COSMOS_KEY: 'k', COSMOS_DATABASE: 'lms' })).toEqual([
      `COSMOS_ENDPOINT is retired: ${instead}`,
      `COSMOS_KEY is retired: ${instead}`,
      'COSMOS_CONNECTION (or COSMOS_CONNECTION__accountEndpoint) is not set',
    ]);
    // Empty counts as not given, as for every setting.
    expect(problems({ ...connection, COSMOS_ENDPOINT: ' ', COSMOS_KEY: '' })).toEqual([]);
  });

  it("reads the connection string's keys in any order and case, and refuses a key whose name only ends like one", () => {
    const accepted = ['accountkey=k; AccountEndpoint=https://a/', 'AccountEndpoint=https://a/;  ACCOUNTKEY=k'];
    for (const connection of accepted) expect(problems({ COSMOS_CONNECTION: connection, COSMOS_DATABASE: 'lms' })).toEqual([]);
    expect(problems({ COSMOS_CONNECTION: 'MyAccountEndpoint=https://a/;AccountKey=k', COSMOS_DATABASE: 'lms' })).toEqual([
      'COSMOS_CONNECTION is not a connection string with an https AccountEndpoint',
    ]);
    expect(problems({ COSMOS_CONNECTION: 'AccountEndpoint=https://a/;OldAccountKey=k', COSMOS_DATABASE: 'lms' })).toEqual([
      'COSMOS_CONNECTION has no AccountKey (with a managed identity, set COSMOS_CONNECTION__accountEndpoint instead)',
    ]);
  });
});

describe('Queue settings', () => {
  const names = { ragQueueName: 'rag-index-jobs', webhooksQueueName: 'webhook-deliveries' };

  it("reads the storage connection as Azure's host does: a connection string, or the queue service URI with __credential and __clientId", () => {
    expect(readQueueSettings({ AzureWebJobsStorage: 'UseDevelopmentStorage=true' })).toEqual({
      connection: { connectionString: 'UseDevelopmentStorage=true' },
      ...names,
    });
    const serviceUri = 'https://acct.queue.core.windows.net';
    expect(readQueueSettings({ AzureWebJobsStorage__queueServiceUri: serviceUri }).connection).toEqual({
      serviceUri,
      managedIdentity: false,
      clientId: undefined,
    });
    const userAssigned = {
      AzureWebJobsStorage__queueServiceUri: serviceUri,
      AzureWebJobsStorage__credential: 'managedidentity',
      AzureWebJobsStorage__clientId: 'c2',
    };
    expect(readQueueSettings(userAssigned).connection).toEqual({ serviceUri, managedIdentity: true, clientId: 'c2' });
  });

  it('names a missing connection and a credential the app cannot make', () => {
    expect(problemsOf(() => readQueueSettings({}))).toEqual(['AzureWebJobsStorage (or AzureWebJobsStorage__queueServiceUri) is not set']);
    try {
      readQueueSettings({ AzureWebJobsStorage__queueServiceUri: 'https://acct.queue.core.windows.net', AzureWebJobsStorage__credential: 'workloadidentity' });
      expect.unreachable();
    } catch (error) {
      expect((error as ConfigurationError).problems).toEqual(['AzureWebJobsStorage__credential must be managedidentity when it is set']);
    }
  });
});

describe('Graph settings', () => {
  it("asks for the base URL's origin as the resource, unless GRAPH_RESOURCE names another", () => {
    expect(readGraphSettings({})).toEqual({ baseUrl: 'https://graph.microsoft.com', resource: 'https://graph.microsoft.com' });
    expect(readGraphSettings({ GRAPH_BASE_URL: 'https://graph.microsoft.us/' })).toEqual({
      baseUrl: 'https://graph.microsoft.us',
      resource: 'https://graph.microsoft.us',
    });
    expect(readGraphSettings({ GRAPH_BASE_URL: 'http://127.0.0.1:9100', GRAPH_RESOURCE: 'https://graph.microsoft.com' })).toEqual({
      baseUrl: 'http://127.0.0.1:9100',
      resource: 'https://graph.microsoft.com',
    });
    expect(() => readGraphSettings({ GRAPH_BASE_URL: 'not a url' })).toThrow(ConfigurationError);
  });
});

describe('webhook settings', () => {
  it('allow plain http to loopback on a developer machine, and refuse it in Azure (WEBSITE_INSTANCE_ID set) as a configuration error', () => {
    expect(readWebhookSettings({ WEBHOOKS_ALLOW_LOOPBACK: 'true' }).allowLoopback).toBe(true);
    expect(readWebhookSettings({ WEBSITE_INSTANCE_ID: 'a1b2c3' }).allowLoopback).toBe(false);
    expect(readWebhookSettings({ WEBHOOKS_ALLOW_LOOPBACK: 'false', WEBSITE_INSTANCE_ID: 'a1b2c3' }).allowLoopback).toBe(false);
    for (const value of ['true', ' TRUE ']) {
      try {
        readWebhookSettings({ WEBHOOKS_ALLOW_LOOPBACK: value, WEBSITE_INSTANCE_ID: 'a1b2c3' });
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigurationError);
        expect((error as ConfigurationError).problems).toEqual([
          "WEBHOOKS_ALLOW_LOOPBACK=true is for a developer's machine and must not be set in Azure (WEBSITE_INSTANCE_ID is set)",
        ]);
      }
    }
  });
});

describe('the settings every instance needs', () => {
  afterEach(() => vi.unstubAllEnvs());

  /** shared/settings/read.ts loaded afresh over these settings alone: it reads each group once per process. */
  async function configWith(env: Record<string, string>) {
    vi.resetModules();
    for (const name of [...Object.keys(SETTINGS), 'WEBSITE_INSTANCE_ID']) vi.stubEnv(name, undefined);
    for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
    return import('../../../shared/settings/read.js');
  }

  const complete = {
    AUTH_TENANT_ID: TENANT,
    AUTH_CLIENT_ID: 'abc',
    COSMOS_CONNECTION: 'AccountEndpoint=https://a/;AccountKey=k;',
    COSMOS_DATABASE: 'lms',
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    CURSOR_SIGNING_KEY: Buffer.alloc(32, 1).toString('base64'),
  };

  it("are checked together at start: every group's problems, or none", async () => {
    expect((await configWith({})).settingsProblems()).toEqual([
      'AUTH_TENANT_ID is not set',
      'AUTH_CLIENT_ID is not set',
      'COSMOS_CONNECTION (or COSMOS_CONNECTION__accountEndpoint) is not set',
      'COSMOS_DATABASE is not set',
      'AzureWebJobsStorage (or AzureWebJobsStorage__queueServiceUri) is not set',
      'CURSOR_SIGNING_KEY is not set (at least 32 random bytes, base64)',
    ]);
    expect((await configWith({ ...complete, WEBHOOKS_ALLOW_LOOPBACK: 'true', WEBSITE_INSTANCE_ID: 'a1' })).settingsProblems()).toEqual([
      "WEBHOOKS_ALLOW_LOOPBACK=true is for a developer's machine and must not be set in Azure (WEBSITE_INSTANCE_ID is set)",
    ]);
    // Embeddings are optional, but one that is set wrong is a problem at start, not at the first RAG job.
    expect((await configWith({ ...complete, EMBEDDINGS_ENDPOINT: 'http://embeddings.example/v1' })).settingsProblems()).toEqual([
      'EMBEDDINGS_ENDPOINT must be an https URL (plain http only on localhost)',
    ]);
    expect((await configWith({ ...complete, EMBEDDINGS_ENDPOINT: 'http://127.0.0.1:8080/v1', WEBSITE_INSTANCE_ID: 'a1' })).settingsProblems()).toEqual([
      "EMBEDDINGS_ENDPOINT over plain http is for a developer's machine and must not be set in Azure (WEBSITE_INSTANCE_ID is set)",
    ]);
    // The contract's database settings beside the real connection: loud at start, and the database is never reached.
    expect((await configWith({ ...complete, COSMOS_KEY: 'k' })).settingsProblems()).toEqual([
      'COSMOS_KEY is retired: set COSMOS_CONNECTION as AccountEndpoint=…;AccountKey=…; ' +
        '(or, for a managed identity, COSMOS_CONNECTION__accountEndpoint) instead',
    ]);
    expect((await configWith(complete)).settingsProblems()).toEqual([]);
  });

  it('are read once: a group keeps what it read, and a bad group fails every time it is asked for, never falling back', async () => {
    const config = await configWith({ ...complete, AUTH_CLIENT_ID: '' });
    expect(config.cosmosSettings().database).toBe('lms');
    vi.stubEnv('COSMOS_DATABASE', 'other');
    expect(config.cosmosSettings().database).toBe('lms');
    expect(config.authSettings).toThrow('The app is not configured: AUTH_CLIENT_ID is not set');
    expect(config.authSettings).toThrow('The app is not configured: AUTH_CLIENT_ID is not set');
  });
});

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** The contract's schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h. */
const CONTRACT_SCHEDULE = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

describe('the retry schedule setting', () => {
  it("is the contract's schedule when unset or blank", () => {
    for (const value of [undefined, '', ' ']) expect(parseRetrySchedule(value)).toEqual(CONTRACT_SCHEDULE);
  });

  it('reads each unit, with spaces around the items', () => {
    expect(parseRetrySchedule('250ms, 3s,2m ,1h')).toEqual([250, 3 * SECOND, 2 * MINUTE, HOUR]);
    expect(parseRetrySchedule(' 7s ')).toEqual([7 * SECOND]);
    expect(parseRetrySchedule('0s')).toEqual([0]);
    expect(parseRetrySchedule('999999999ms')).toEqual([999_999_999]);
  });

  it('refuses at start anything that is not a duration, naming the setting and the value', () => {
    for (const bad of ['5', 's', '5 s', '5S', '5d', '-5s', '1.5h', '5s5', 'x5s', '5sec', '1234567890ms', 'five']) {
      expect(problemsOf(() => parseRetrySchedule(`5s,${bad},1h`))).toEqual([
        `WEBHOOKS_RETRY_SCHEDULE has "${bad}", which is not a duration such as 5s, 10m or 2h`,
      ]);
    }
  });

  it('refuses an empty item, as any other that is not a duration: never a schedule with a wait left out', () => {
    for (const bad of ['1s,,2s', '1s, ,2s', ',7s', '7s,', ' , ,', ',']) {
      expect(
        problemsOf(() => parseRetrySchedule(bad)),
        bad,
      ).toEqual(['WEBHOOKS_RETRY_SCHEDULE has "", which is not a duration such as 5s, 10m or 2h']);
    }
  });

  it('is part of the webhook settings, which fail as a whole on a bad schedule', () => {
    expect(readWebhookSettings({}).retrySchedule).toEqual(CONTRACT_SCHEDULE);
    expect(readWebhookSettings({ WEBHOOKS_RETRY_SCHEDULE: '1s,2s' }).retrySchedule).toEqual([SECOND, 2 * SECOND]);
    expect(() => readWebhookSettings({ WEBHOOKS_RETRY_SCHEDULE: '10 minutes' })).toThrow(ConfigurationError);
  });
});

const AZURE_OPENAI_ENDPOINT = 'https://contoso.openai.azure.com/openai/deployments/embeddings-small/embeddings?api-version=2024-10-21';

describe('embeddings settings', () => {
  it('are absent when no endpoint is set: embeddings are optional', () => {
    expect(readEmbeddingsSettings({})).toBeUndefined();
    expect(readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: '  ', EMBEDDINGS_API_KEY: 'k' })).toBeUndefined();
  });

  it('take the endpoint, key and model as given', () => {
    expect(
      readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: 'https://api.openai.com/v1', EMBEDDINGS_API_KEY: ' k ', EMBEDDINGS_MODEL: ' text-embedding-3-small ' }),
    ).toEqual({
      endpoint: 'https://api.openai.com/v1',
      apiKey: 'k',
      model: 'text-embedding-3-small',
    });
    expect(readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: AZURE_OPENAI_ENDPOINT })).toEqual({
      endpoint: AZURE_OPENAI_ENDPOINT,
      apiKey: undefined,
      model: undefined,
    });
  });

  it.each(['http://localhost:8080/v1', 'http://127.0.0.1:8080/v1', 'http://[::1]:8080/v1'])('take plain http on this machine: %s', (endpoint) => {
    expect(readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: endpoint })).toMatchObject({ endpoint });
  });

  it.each([
    ['not-a-url', 'EMBEDDINGS_ENDPOINT is not a URL'],
    ['ftp://localhost/v1', 'EMBEDDINGS_ENDPOINT must be an https URL (plain http only on localhost)'],
    ['http://embeddings.example/v1', 'EMBEDDINGS_ENDPOINT must be an https URL (plain http only on localhost)'],
    ['https://contoso.openai.azure.com/openai/deployments/small/embeddings', expect.stringContaining('no api-version query')],
  ])('refuse the endpoint %s', (endpoint, problem) => {
    try {
      readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: endpoint });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).problems).toEqual([problem]);
    }
  });

  it.each(['http://localhost:8080/v1', 'http://127.0.0.1:8080/v1', 'http://[::1]:8080/v1'])(
    'refuse plain http in Azure (WEBSITE_INSTANCE_ID set), even on this machine, so that the key never travels in the clear: %s',
    (endpoint) => {
      expect(() => readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: endpoint, EMBEDDINGS_API_KEY: 'k', WEBSITE_INSTANCE_ID: 'a1b2c3' })).toThrow(
        "EMBEDDINGS_ENDPOINT over plain http is for a developer's machine and must not be set in Azure (WEBSITE_INSTANCE_ID is set)",
      );
      expect(readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: endpoint.replace('http:', 'https:'), WEBSITE_INSTANCE_ID: 'a1b2c3' })).toMatchObject({
        endpoint: endpoint.replace('http:', 'https:'),
      });
    },
  );

  it.each(['sk-abc def', 'sk-ключ', 'sk-abc\u0000'])('refuse a key that no HTTP header can carry: %j', (apiKey) => {
    expect(() => readEmbeddingsSettings({ EMBEDDINGS_ENDPOINT: 'https://api.openai.com/v1', EMBEDDINGS_API_KEY: apiKey })).toThrow(
      'EMBEDDINGS_API_KEY has characters an HTTP header cannot carry (spaces, or beyond ASCII)',
    );
  });
});
