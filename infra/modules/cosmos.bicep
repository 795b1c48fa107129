// Cosmos DB for NoSQL: the account with keys off (Entra ID only), the database and each container exactly as
// shared/data/containers.ts defines it (generated.json), the change feed trigger's leases container included.

@description('The region.')
param location string

@description('Tags.')
param tags object

@description('The account\'s name.')
param name string

@description('The database (COSMOS_DATABASE).')
param databaseName string

@description('The containers, as the Cosmos DB resource provider takes them: id, partitionKey, indexingPolicy, defaultTtl.')
param containers object[]

@description('0: serverless; otherwise the database\'s autoscale maximum RU/s, shared by its containers.')
param autoscaleMaxThroughput int

@description('Reached through a private endpoint only.')
param privateNetworking bool

@description('Serverless bills per request; provisioned throughput is set on the database.')
var serverless = autoscaleMaxThroughput == 0

resource account 'Microsoft.DocumentDB/databaseAccounts@2024-11-15' = {
  name: name
  location: location
  tags: tags
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    locations: [{ locationName: location, failoverPriority: 0, isZoneRedundant: false }]
    consistencyPolicy: { defaultConsistencyLevel: 'Session' }
    capabilities: serverless ? [{ name: 'EnableServerless' }] : []
    disableLocalAuth: true
    disableKeyBasedMetadataWriteAccess: true
    minimalTlsVersion: 'Tls12'
    publicNetworkAccess: privateNetworking ? 'Disabled' : 'Enabled'
  }
}

resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2024-11-15' = {
  parent: account
  name: databaseName
  properties: {
    resource: { id: databaseName }
    options: serverless ? {} : { autoscaleSettings: { maxThroughput: autoscaleMaxThroughput } }
  }
}

resource container 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2024-11-15' = [
  for definition in containers: {
    parent: database
    name: definition.id
    properties: { resource: definition }
  }
]

@description('The account\'s name.')
output name string = account.name
@description('The account\'s endpoint (COSMOS_CONNECTION__accountEndpoint).')
output endpoint string = account.properties.documentEndpoint
