// The storage account: the Functions host's own blobs, the deployment package's container and the queues the
// code sends to. Shared keys are off, so every client signs in with Entra ID.

@description('The region.')
param location string

@description('Tags.')
param tags object

@description('The account\'s name.')
param name string

@description('The queues to create (the code\'s, with their -poison queues).')
param queues string[]

@description('Reached through private endpoints only.')
param privateNetworking bool

@description('Where Flex Consumption keeps the deployment package that azd deploy uploads.')
var deploymentContainerName = 'app-package'

resource account 'Microsoft.Storage/storageAccounts@2024-01-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    allowCrossTenantReplication: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    publicNetworkAccess: privateNetworking ? 'Disabled' : 'Enabled'
    networkAcls: { defaultAction: privateNetworking ? 'Deny' : 'Allow', bypass: privateNetworking ? 'None' : 'AzureServices' }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2024-01-01' = {
  parent: account
  name: 'default'
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2024-01-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: { publicAccess: 'None' }
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2024-01-01' = {
  parent: account
  name: 'default'
}

resource queue 'Microsoft.Storage/storageAccounts/queueServices/queues@2024-01-01' = [
  for queueName in queues: {
    parent: queueService
    name: queueName
  }
]

@description('The account\'s name.')
output name string = account.name
@description('The blob service\'s URI, with its trailing slash.')
output blobEndpoint string = 'https://${account.name}.blob.${environment().suffixes.storage}/'
@description('The queue service\'s URI, with its trailing slash.')
output queueEndpoint string = 'https://${account.name}.queue.${environment().suffixes.storage}/'
@description('The deployment package\'s container.')
output deploymentContainerName string = deploymentContainer.name
