/**
 * The deployment against the code: the resources `azd provision` would create, as Bicep evaluates them
 * (dist/infra/<environment>.snapshot.json) from the compiled template (dist/infra/main.json), both written by
 * `npm run infra` (which `npm test` runs first). What the code decides is read here from the code itself:
 * the containers of shared/data/containers.ts, the settings of shared/settings/catalog.ts and the bindings of functions/.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONTAINERS } from '../../shared/data/containers.js';
import { SETTINGS, type Setting } from '../../shared/settings/catalog.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface Resource {
  id: string;
  type: string;
  name: string;
  kind?: string;
  sku?: unknown;
  identity?: any;
  properties?: any;
}

function built(file: string): string {
  const path = join(root, 'dist', 'infra', file);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npm run infra\` first`);
  return readFileSync(path, 'utf8');
}

const template = JSON.parse(built('main.json'));
const environments = JSON.parse(readFileSync(join(root, 'tools', 'bicep', 'snapshots.json'), 'utf8')).environments as Record<string, Record<string, string>>;
const snapshots = Object.fromEntries(
  Object.keys(environments).map((name) => [name, JSON.parse(built(`${name}.snapshot.json`)).predictedResources as Resource[]]),
) as Record<'default' | 'options', Resource[]>;

const all = (resources: Resource[], type: string) => resources.filter((resource) => resource.type === type);
function one(resources: Resource[], type: string): Resource {
  const found = all(resources, type);
  expect(found, type).toHaveLength(1);
  return found[0]!;
}
const appSettings = (resources: Resource[]): Record<string, string> => one(resources, 'Microsoft.Web/sites/config').properties;
const settings = Object.entries(SETTINGS) as [string, Setting][];

/** The TypeScript sources of functions/, where the bindings are declared. */
const functionSources = readdirSync(join(root, 'functions'))
  .filter((file) => file.endsWith('.ts'))
  .map((file) => readFileSync(join(root, 'functions', file), 'utf8'));

/** A setting is set when it is given, or as an identity-based connection (`<name>__…`), as Azure's host reads it. */
const isSet = (values: Record<string, string>, name: string) =>
  Object.entries(values).some(([setting, value]) => (setting === name || setting.startsWith(`${name}__`)) && String(value).trim() !== '');

/** `%NAME%` in a binding, resolved as the host resolves it from the app settings. */
const resolve = (expression: string, values: Record<string, string>) => expression.replace(/%(\w+)%/g, (_, name: string) => values[name] ?? `%${name}%`);

describe.each(Object.keys(snapshots) as ('default' | 'options')[])('the %s deployment', (environment) => {
  const resources = snapshots[environment];
  const values = appSettings(resources);

  it('creates the database and every container exactly as shared/data/containers.ts defines it', () => {
    const database = one(resources, 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases');
    expect(database.properties.resource.id).toBe(values.COSMOS_DATABASE);
    const containers = all(resources, 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers');
    expect(containers.map((container) => container.properties.resource)).toEqual(Object.values(CONTAINERS));
    for (const container of containers) expect(container.name).toBe(`${database.name}/${container.properties.resource.id}`);
  });

  it("creates the change feed trigger's leases container, which the trigger may not create itself", () => {
    const relay = functionSources.find((source) => source.includes('app.cosmosDB('))!;
    expect(relay).toMatch(/createLeaseContainerIfNotExists: false/);
    const leases = all(resources, 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers').find(
      (container) => container.properties.resource.id === CONTAINERS.leases.id,
    );
    expect(leases?.properties.resource.partitionKey).toEqual({ paths: ['/id'] });
  });

  it('sets every setting Azure requires, and gives every %SETTING% a binding names a value', () => {
    const required = settings.filter(([, setting]) => setting.azure === 'required').map(([name]) => name);
    expect(required.filter((name) => !isSet(values, name))).toEqual([]);
    const bound = new Set(functionSources.flatMap((source) => [...source.matchAll(/%(\w+)%/g)].map((match) => match[1]!)));
    expect(bound.size).toBeGreaterThan(0);
    for (const name of bound) expect(values[name], name).toMatch(/^\S/);
    // A binding's connection is set by name or by its identity-based settings.
    const connections = new Set(functionSources.flatMap((source) => [...source.matchAll(/\bconnection: '(\w+)'/g)].map((match) => match[1]!)));
    expect(connections.size).toBeGreaterThan(0);
    for (const name of connections) expect(isSet(values, name), name).toBe(true);
  });

  it('sets no setting that Flex Consumption refuses or that belongs to the local stack', () => {
    const notInAzure = settings.filter(([, setting]) => setting.azure === 'platform' || setting.azure === 'never' || setting.azure === 'retired');
    expect(notInAzure.map(([name]) => name).filter((name) => name in values)).toEqual([]);
    for (const refused of ['FUNCTIONS_WORKER_RUNTIME', 'FUNCTIONS_EXTENSION_VERSION', 'WEBSITE_NODE_DEFAULT_VERSION', 'WEBSITE_RUN_FROM_PACKAGE'])
      expect(values, refused).not.toHaveProperty(refused);
  });

  it('creates the queue of every queue trigger and of every queue the code sends to, each with its -poison queue', () => {
    const queues = all(resources, 'Microsoft.Storage/storageAccounts/queueServices/queues').map((queue) => queue.name.split('/').at(-1));
    const triggered = functionSources.flatMap((source) =>
      [...source.matchAll(/storageQueue\([^)]*queueName: '([^']+)'/g)].map((match) => resolve(match[1]!, values)),
    );
    const sent = settings.filter(([, setting]) => setting.queue).map(([name]) => values[name]!);
    expect(triggered.length).toBeGreaterThan(0);
    const wanted = [...triggered, ...sent].flatMap((queue) => (queue.endsWith('-poison') ? [queue] : [queue, `${queue}-poison`]));
    expect(queues).toEqual(expect.arrayContaining([...new Set(wanted)]));
  });

  it('runs the app on Flex Consumption, Node.js 22, as the user-assigned identity, with the instance memory and count asked for', () => {
    expect(one(resources, 'Microsoft.Web/serverfarms').sku).toEqual({ tier: 'FlexConsumption', name: 'FC1' });
    const site = one(resources, 'Microsoft.Web/sites');
    const identity = one(resources, 'Microsoft.ManagedIdentity/userAssignedIdentities');
    expect(site.properties.functionAppConfig.runtime).toEqual({ name: 'node', version: '22' });
    expect(site.identity).toEqual({ type: 'UserAssigned', userAssignedIdentities: { [identity.id]: {} } });
    expect(site.properties.functionAppConfig.scaleAndConcurrency).toEqual({
      instanceMemoryMB: Number(environments[environment]!.FUNCTIONS_INSTANCE_MEMORY_MB ?? 2048),
      maximumInstanceCount: Number(environments[environment]!.FUNCTIONS_MAXIMUM_INSTANCE_COUNT ?? 100),
    });
    // The package's container, reached as the identity.
    expect(site.properties.functionAppConfig.deployment.storage).toMatchObject({
      type: 'blobContainer',
      authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: identity.id },
    });
    const container = one(resources, 'Microsoft.Storage/storageAccounts/blobServices/containers');
    expect(site.properties.functionAppConfig.deployment.storage.value).toContain(`'${container.name.split('/')[0]}'`);
    expect(site.properties.functionAppConfig.deployment.storage.value).toContain(`'${container.name.split('/').at(-1)}'`);
  });

  it("connects to storage and Cosmos DB by identity only, with the identity's client id, and carries no key or connection string", () => {
    const identity = one(resources, 'Microsoft.ManagedIdentity/userAssignedIdentities');
    const clientId = expect.stringMatching(new RegExp(`userAssignedIdentities/${identity.name}'.*\\)\\.clientId\\]$`));
    const account = one(resources, 'Microsoft.DocumentDB/databaseAccounts');
    expect(values).toMatchObject({
      AzureWebJobsStorage__credential: 'managedidentity',
      AzureWebJobsStorage__clientId: clientId,
      AzureWebJobsStorage__blobServiceUri: expect.stringContaining('.blob.'),
      AzureWebJobsStorage__queueServiceUri: expect.stringContaining('.queue.'),
      COSMOS_CONNECTION__accountEndpoint: expect.stringMatching(new RegExp(`databaseAccounts/${account.name}'.*\\)\\.documentEndpoint\\]$`)),
      COSMOS_CONNECTION__credential: 'managedidentity',
      COSMOS_CONNECTION__clientId: clientId,
      // On-Behalf-Of without a secret: the identity's token is the client assertion.
      AUTH_MANAGED_IDENTITY_CLIENT_ID: clientId,
      APPLICATIONINSIGHTS_AUTHENTICATION_STRING: expect.stringMatching(/^\[format\('ClientId=\{0\};Authorization=AAD'/),
    });
    // The connection string forms carry a key: only their identity-based settings may be set.
    for (const keyed of ['AzureWebJobsStorage', 'COSMOS_CONNECTION', 'AUTH_CLIENT_SECRET', 'AUTH_CLIENT_CERTIFICATE_PATH', 'EMBEDDINGS_API_KEY'])
      expect(values, keyed).not.toHaveProperty(keyed);
    const text = JSON.stringify(resources);
    expect(text).not.toMatch(/listKeys|listConnectionStrings|listAccountSas|listServiceSas|AccountKey=|SharedAccessKey|SharedAccessSignature/i);
    expect(built('main.json')).not.toMatch(/listKeys|listConnectionStrings|listAccountSas|listServiceSas|AccountKey=|SharedAccessKey/i);
  });

  it('switches local authentication off everywhere: storage keys, Cosmos DB keys, Application Insights and Log Analytics', () => {
    expect(one(resources, 'Microsoft.Storage/storageAccounts').properties).toMatchObject({
      allowSharedKeyAccess: false,
      allowBlobPublicAccess: false,
      minimumTlsVersion: 'TLS1_2',
      supportsHttpsTrafficOnly: true,
    });
    expect(one(resources, 'Microsoft.DocumentDB/databaseAccounts').properties).toMatchObject({
      disableLocalAuth: true,
      disableKeyBasedMetadataWriteAccess: true,
    });
    expect(one(resources, 'Microsoft.Insights/components').properties.DisableLocalAuth).toBe(true);
    expect(one(resources, 'Microsoft.OperationalInsights/workspaces').properties.features.disableLocalAuth).toBe(true);
    expect(one(resources, 'Microsoft.KeyVault/vaults').properties.enableRbacAuthorization).toBe(true);
  });
});

/** Azure's built-in roles, by the names its documentation gives them. */
const BUILT_IN_ROLES = {
  'Storage Blob Data Owner': 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b',
  'Storage Queue Data Contributor': '974c5e8b-45b9-4653-ba55-5f855dd0fb88',
  'Monitoring Metrics Publisher': '3913510d-42f4-4e42-8a64-420c390055eb',
  'Key Vault Secrets User': '4633458b-17de-408a-b874-0445c86b69e6',
};
/** Cosmos DB's data-plane role, a definition of every account. */
const COSMOS_DB_BUILT_IN_DATA_CONTRIBUTOR = '00000000-0000-0000-0000-000000000002';

/** The principal's role assignments, as `<role id> on <resource type>`. */
function rolesOf(resources: Resource[], isPrincipal: (principalId: string) => boolean): string[] {
  const control = all(resources, 'Microsoft.Authorization/roleAssignments')
    .filter((assignment) => isPrincipal(assignment.properties.principalId))
    .map((assignment) => {
      // The scope is in the id: /…/providers/<namespace>/<type>/<name>/providers/Microsoft.Authorization/roleAssignments/<guid>.
      const scopeType = /providers\/([^/]+\/[^/]+)\/[^/]+\/providers\/Microsoft\.Authorization/.exec(assignment.id)![1];
      return `${assignment.properties.roleDefinitionId.split('/').at(-1)} on ${scopeType}`;
    });
  const account = one(resources, 'Microsoft.DocumentDB/databaseAccounts');
  const data = all(resources, 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments')
    .filter((assignment) => isPrincipal(assignment.properties.principalId))
    .map((assignment) => {
      expect(assignment.properties.scope).toBe(account.id);
      expect(assignment.properties.roleDefinitionId).toBe(`${account.id}/sqlRoleDefinitions/${COSMOS_DB_BUILT_IN_DATA_CONTRIBUTOR}`);
      return 'Cosmos DB Built-in Data Contributor on the account';
    });
  return [...control, ...data].sort();
}

describe('the role assignments', () => {
  const dataRoles = [
    `${BUILT_IN_ROLES['Storage Blob Data Owner']} on Microsoft.Storage/storageAccounts`,
    `${BUILT_IN_ROLES['Storage Queue Data Contributor']} on Microsoft.Storage/storageAccounts`,
    `${BUILT_IN_ROLES['Monitoring Metrics Publisher']} on Microsoft.Insights/components`,
    'Cosmos DB Built-in Data Contributor on the account',
  ];

  it("give the app's identity its data roles and the secrets' reader role, and nothing else", () => {
    for (const resources of Object.values(snapshots)) {
      const identity = one(resources, 'Microsoft.ManagedIdentity/userAssignedIdentities');
      const isIdentity = (principalId: string) => principalId.includes(`userAssignedIdentities/${identity.name}'`) && principalId.endsWith('.principalId]');
      expect(rolesOf(resources, isIdentity)).toEqual([...dataRoles, `${BUILT_IN_ROLES['Key Vault Secrets User']} on Microsoft.KeyVault/vaults`].sort());
      for (const assignment of all(resources, 'Microsoft.Authorization/roleAssignments').filter((each) => isIdentity(each.properties.principalId)))
        expect(assignment.properties.principalType).toBe('ServicePrincipal');
    }
  });

  it('give the developer that a parameter names the same data roles, and no secret; no developer, no role', () => {
    const developer = environments.default!.AZURE_DEPLOYER_PRINCIPAL_ID!;
    expect(rolesOf(snapshots.default, (principalId) => principalId === developer)).toEqual([...dataRoles].sort());
    for (const assignment of all(snapshots.default, 'Microsoft.Authorization/roleAssignments').filter((each) => each.properties.principalId === developer))
      expect(assignment.properties.principalType).toBe('User');
    expect(environments.options!.AZURE_DEPLOYER_PRINCIPAL_ID).toBeUndefined();
    expect(all(snapshots.options, 'Microsoft.Authorization/roleAssignments').filter((each) => each.properties.principalType !== 'ServicePrincipal')).toEqual(
      [],
    );
    expect(all(snapshots.options, 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments')).toHaveLength(1);
  });
});

describe('the cursor signing key', () => {
  // What azd generates for the parameter (metadata `type: 'generate'`), as `npm run infra` did for the snapshot.
  const generatedKey = /param cursorSigningKey = '([^']+)'/.exec(built('default.bicepparam'))![1]!;

  it('is generated by azd once per environment, long enough for the app, and secure', () => {
    const { metadata, type } = template.parameters.cursorSigningKey;
    expect(type).toBe('securestring');
    expect(metadata.azd).toEqual({ type: 'generate', config: { length: 64, noSpecial: true } });
    // Letters and digits are base64: the app decodes at least the 32 bytes it wants.
    expect(Buffer.from(generatedKey, 'base64').length).toBeGreaterThanOrEqual(32);
    const { parameters } = JSON.parse(readFileSync(join(root, 'infra', 'main.parameters.json'), 'utf8'));
    expect(parameters, 'azd generates only what main.parameters.json does not give').not.toHaveProperty('cursorSigningKey');
  });

  it('is in Key Vault, read by the app through a Key Vault reference as its identity', () => {
    const resources = snapshots.default;
    const vault = one(resources, 'Microsoft.KeyVault/vaults');
    const secret = one(resources, 'Microsoft.KeyVault/vaults/secrets');
    // A secure parameter stays a reference in the snapshot, as in the deployment's history.
    expect(secret.properties.value).toBe("[parameters('cursorSigningKey')]");
    const [vaultName, secretName] = secret.name.split('/');
    expect(vaultName).toBe(vault.name);
    expect(appSettings(resources).CURSOR_SIGNING_KEY).toBe(`@Microsoft.KeyVault(VaultName=${vaultName};SecretName=${secretName})`);
    const identity = one(resources, 'Microsoft.ManagedIdentity/userAssignedIdentities');
    expect(one(resources, 'Microsoft.Web/sites').properties.keyVaultReferenceIdentity).toBe(identity.id);
  });

  it('is in no output, no app setting and no other resource', () => {
    const elsewhere = JSON.stringify(snapshots.default.filter((resource) => resource.type !== 'Microsoft.KeyVault/vaults/secrets'));
    expect(elsewhere).not.toContain(generatedKey);
    expect(elsewhere).not.toMatch(/cursorSigningKey/i);
    for (const [name, output] of Object.entries(template.outputs as Record<string, { type: string; value: string }>)) {
      expect(output.type, name).not.toMatch(/^secure/i);
      expect(output.value, name).not.toMatch(/cursorSigningKey/);
    }
  });
});

describe('the options', () => {
  it('default to serverless Cosmos DB, public endpoints and no CORS origin', () => {
    const resources = snapshots.default;
    expect(one(resources, 'Microsoft.DocumentDB/databaseAccounts').properties.capabilities).toEqual([{ name: 'EnableServerless' }]);
    expect(resources.filter((resource) => resource.type.startsWith('Microsoft.Network/'))).toEqual([]);
    expect(one(resources, 'Microsoft.Web/sites').properties.virtualNetworkSubnetId).toBeNull();
    expect(one(resources, 'Microsoft.Web/sites').properties.siteConfig.cors).toEqual({ allowedOrigins: [], supportCredentials: false });
  });

  it('give provisioned throughput, the CORS origins and private networking when asked', () => {
    const resources = snapshots.options;
    const options = environments.options!;
    expect(one(resources, 'Microsoft.DocumentDB/databaseAccounts').properties.capabilities).toEqual([]);
    expect(one(resources, 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases').properties.options).toEqual({
      autoscaleSettings: { maxThroughput: Number(options.COSMOS_AUTOSCALE_MAX_THROUGHPUT) },
    });
    expect(one(resources, 'Microsoft.Web/sites').properties.siteConfig.cors).toEqual({
      allowedOrigins: options.CORS_ALLOWED_ORIGINS!.split(',').map((origin) => origin.trim()),
      supportCredentials: false,
    });
    for (const type of ['Microsoft.Storage/storageAccounts', 'Microsoft.DocumentDB/databaseAccounts', 'Microsoft.KeyVault/vaults'])
      expect(one(resources, type).properties.publicNetworkAccess, type).toBe('Disabled');
    const network = one(resources, 'Microsoft.Network/virtualNetworks');
    const appSubnet = network.properties.subnets.find((subnet: any) => subnet.properties.delegations?.length);
    expect(appSubnet.properties.delegations[0].properties.serviceName).toBe('Microsoft.App/environments');
    const subnetId = one(resources, 'Microsoft.Web/sites').properties.virtualNetworkSubnetId;
    expect(subnetId).toContain(`virtualNetworks/${network.name}'`);
    expect(subnetId).toContain(`.subnets[0].id`);
    const endpoints = all(resources, 'Microsoft.Network/privateEndpoints').map((endpoint) => {
      const [connection] = endpoint.properties.privateLinkServiceConnections;
      return `${connection.properties.groupIds[0]} of ${connection.properties.privateLinkServiceId.split('/').slice(-2).join('/')}`;
    });
    const named = (type: string) => `${type.split('/').at(-1)}/${one(resources, type).name}`;
    expect(endpoints.sort()).toEqual(
      [
        `blob of ${named('Microsoft.Storage/storageAccounts')}`,
        `queue of ${named('Microsoft.Storage/storageAccounts')}`,
        `Sql of ${named('Microsoft.DocumentDB/databaseAccounts')}`,
        `vault of ${named('Microsoft.KeyVault/vaults')}`,
      ].sort(),
    );
    expect(all(resources, 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups')).toHaveLength(endpoints.length);
  });
});
