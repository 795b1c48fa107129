// The data roles of one principal, the app's identity or a developer's: the same set for both. Storage Blob Data
// Owner (the host's own blobs and the deployment package), Storage Queue Data Contributor (the queues the app
// sends to and its triggers read), Cosmos DB Built-in Data Contributor (a data-plane role: no key), Monitoring
// Metrics Publisher (telemetry to Application Insights, whose local auth is off).

@description('What names the principal\'s assignments, known before deployment: a managed identity\'s resource id, or a user\'s object id.')
param principalKey string

@description('The principal\'s object id.')
param principalId string

@description('ServicePrincipal for a managed identity, User for a person.')
param principalType 'ServicePrincipal' | 'User'

@description('The storage account.')
param storageAccountName string

@description('The Cosmos DB account.')
param cosmosAccountName string

@description('Application Insights.')
param applicationInsightsName string

@description('Built-in role ids, as Azure defines them.')
var roles = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
  cosmosDbBuiltInDataContributor: '00000000-0000-0000-0000-000000000002'
}

resource storage 'Microsoft.Storage/storageAccounts@2024-01-01' existing = {
  name: storageAccountName
}

resource cosmos 'Microsoft.DocumentDB/databaseAccounts@2024-11-15' existing = {
  name: cosmosAccountName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource storageRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in [roles.storageBlobDataOwner, roles.storageQueueDataContributor]: {
    name: guid(storage.id, principalKey, role)
    scope: storage
    properties: {
      principalId: principalId
      principalType: principalType
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
    }
  }
]

resource metricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(applicationInsights.id, principalKey, roles.monitoringMetricsPublisher)
  scope: applicationInsights
  properties: {
    principalId: principalId
    principalType: principalType
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
  }
}

resource cosmosDataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-11-15' = {
  parent: cosmos
  name: guid(cosmos.id, principalKey, roles.cosmosDbBuiltInDataContributor)
  properties: {
    principalId: principalId
    roleDefinitionId: '${cosmos.id}/sqlRoleDefinitions/${roles.cosmosDbBuiltInDataContributor}'
    scope: cosmos.id
  }
}
