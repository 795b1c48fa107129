import { describe, expect, it } from 'vitest';
import { readAuthSettings, readCosmosSettings, readGraphSettings, readQueueSettings, readWebhookSettings } from '../../shared/config.js';
import { ConfigurationError } from '../../shared/errors.js';

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

  it('fails closed on a missing or malformed connection and a missing database, naming each problem', () => {
    const problems = (env: Record<string, string>) => {
      try {
        readCosmosSettings(env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigurationError);
        return (error as ConfigurationError).problems;
      }
      return [];
    };
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
    expect(() => readQueueSettings({})).toThrow(ConfigurationError);
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
