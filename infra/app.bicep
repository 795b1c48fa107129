// The API's resources in their resource group: the identity it runs as, monitoring, storage, Cosmos DB, Key Vault,
// the Flex Consumption Function App, the identity's roles (and, when named, a developer's), private networking.

@description('The region of every resource.')
param location string

@description('Tags of every resource.')
param tags object

@description('Seeds the globally unique names.')
param resourceToken string

@description('AUTH_TENANT_ID.')
param authTenantId string

@description('AUTH_CLIENT_ID.')
param authClientId string

@description('Optional app settings by name; an empty value leaves the setting out.')
param optionalAppSettings object

@description('Origins allowed to call the API from a browser.')
param corsAllowedOrigins string[]

@description('The memory of each instance, in MB.')
param instanceMemoryMB int

@description('The most instances.')
param maximumInstanceCount int

@description('0: serverless; otherwise the database\'s autoscale maximum RU/s.')
param cosmosAutoscaleMaxThroughput int

@description('Private endpoints and a virtual network instead of public access to the data.')
param privateNetworking bool

@description('A user given the app\'s data roles; empty: nobody.')
param deployerPrincipalId string

@secure()
@description('CURSOR_SIGNING_KEY, stored in Key Vault.')
param cursorSigningKey string

@description('What the code decides: containers, queues, app settings with a value to start from (npm run settings).')
var generated = loadJsonContent('generated.json')

@description('The resources\' names, known before anything is deployed (so that What-If can predict the role assignments).')
var names = {
  storage: 'st${resourceToken}'
  cosmos: 'cosmos-${resourceToken}'
  applicationInsights: 'appi-${resourceToken}'
  keyVault: 'kv-${resourceToken}'
}

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-${resourceToken}'
  location: location
  tags: tags
}

module monitoring 'modules/monitoring.bicep' = {
  params: {
    location: location
    tags: tags
    workspaceName: 'log-${resourceToken}'
    applicationInsightsName: names.applicationInsights
  }
}

module storage 'modules/storage.bicep' = {
  params: {
    location: location
    tags: tags
    name: names.storage
    queues: generated.queues
    privateNetworking: privateNetworking
  }
}

module cosmos 'modules/cosmos.bicep' = {
  params: {
    location: location
    tags: tags
    name: names.cosmos
    databaseName: generated.appSettings.COSMOS_DATABASE
    containers: generated.containers
    autoscaleMaxThroughput: cosmosAutoscaleMaxThroughput
    privateNetworking: privateNetworking
  }
}

module keyVault 'modules/key-vault.bicep' = {
  params: {
    location: location
    tags: tags
    name: names.keyVault
    cursorSigningKey: cursorSigningKey
    readerId: identity.id
    readerPrincipalId: identity.properties.principalId
    privateNetworking: privateNetworking
  }
}

module network 'modules/network.bicep' = if (privateNetworking) {
  params: {
    location: location
    tags: tags
    name: 'vnet-${resourceToken}'
    storageAccountName: names.storage
    cosmosAccountName: names.cosmos
    keyVaultName: names.keyVault
  }
  dependsOn: [storage, cosmos, keyVault]
}

// The app's identity, and a developer who debugs it, hold the same data roles.
module appAccess 'modules/data-access.bicep' = {
  params: {
    principalKey: identity.id
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    storageAccountName: names.storage
    cosmosAccountName: names.cosmos
    applicationInsightsName: names.applicationInsights
  }
  dependsOn: [storage, cosmos, monitoring]
}

module deployerAccess 'modules/data-access.bicep' = if (!empty(deployerPrincipalId)) {
  params: {
    principalKey: deployerPrincipalId
    principalId: deployerPrincipalId
    principalType: 'User'
    storageAccountName: names.storage
    cosmosAccountName: names.cosmos
    applicationInsightsName: names.applicationInsights
  }
  dependsOn: [storage, cosmos, monitoring]
}

module functionApp 'modules/function-app.bicep' = {
  params: {
    location: location
    tags: tags
    resourceToken: resourceToken
    identityId: identity.id
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    deploymentContainerUrl: '${storage.outputs.blobEndpoint}${storage.outputs.deploymentContainerName}'
    corsAllowedOrigins: corsAllowedOrigins
    subnetId: privateNetworking ? network!.outputs.appSubnetId : ''
    appSettings: union(
      generated.appSettings,
      toObject(filter(items(optionalAppSettings), setting => !empty(setting.value)), setting => setting.key, setting => setting.value),
      {
        AUTH_TENANT_ID: authTenantId
        AUTH_CLIENT_ID: authClientId
        // On-Behalf-Of's client assertion: this identity's token, which the app registration's federated credential trusts.
        AUTH_MANAGED_IDENTITY_CLIENT_ID: identity.properties.clientId
        AzureWebJobsStorage__blobServiceUri: storage.outputs.blobEndpoint
        AzureWebJobsStorage__queueServiceUri: storage.outputs.queueEndpoint
        AzureWebJobsStorage__credential: 'managedidentity'
        AzureWebJobsStorage__clientId: identity.properties.clientId
        COSMOS_CONNECTION__accountEndpoint: cosmos.outputs.endpoint
        COSMOS_CONNECTION__credential: 'managedidentity'
        COSMOS_CONNECTION__clientId: identity.properties.clientId
        CURSOR_SIGNING_KEY: '@Microsoft.KeyVault(VaultName=${keyVault.outputs.name};SecretName=${keyVault.outputs.cursorSigningKeySecretName})'
        APPLICATIONINSIGHTS_CONNECTION_STRING: monitoring.outputs.connectionString
        APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identity.properties.clientId};Authorization=AAD'
      }
    )
  }
  // The roles come first: the host starts with these settings and signs in with them at once.
  dependsOn: [appAccess]
}

@description('The Function App\'s name.')
output functionAppName string = functionApp.outputs.name
@description('The API\'s base URL.')
output apiBaseUrl string = functionApp.outputs.apiBaseUrl
@description('The identity\'s client id.')
output identityClientId string = identity.properties.clientId
@description('The identity\'s object id.')
output identityPrincipalId string = identity.properties.principalId
@description('The Cosmos DB account\'s name.')
output cosmosAccountName string = cosmos.outputs.name
@description('The storage account\'s name.')
output storageAccountName string = storage.outputs.name
@description('The Key Vault\'s name.')
output keyVaultName string = keyVault.outputs.name
