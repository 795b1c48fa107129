// Private networking (privateNetworking): a virtual network with a subnet delegated to the Function App (Flex
// Consumption joins it) and one for private endpoints of the blob and queue services, Cosmos DB and Key Vault,
// each with its private DNS zone linked to the network, so the app resolves them to private addresses.

@description('The region.')
param location string

@description('Tags.')
param tags object

@description('The network\'s name.')
param name string

@description('The storage account.')
param storageAccountName string

@description('The Cosmos DB account.')
param cosmosAccountName string

@description('The Key Vault.')
param keyVaultName string

@description('Each private endpoint: the resource, its sub-resource (group id) and the private DNS zone of that service.')
var endpoints = [
  { type: 'Microsoft.Storage/storageAccounts', name: storageAccountName, groupId: 'blob', zone: 'privatelink.blob.${environment().suffixes.storage}' }
  { type: 'Microsoft.Storage/storageAccounts', name: storageAccountName, groupId: 'queue', zone: 'privatelink.queue.${environment().suffixes.storage}' }
  { type: 'Microsoft.DocumentDB/databaseAccounts', name: cosmosAccountName, groupId: 'Sql', zone: 'privatelink.documents.azure.com' }
  { type: 'Microsoft.KeyVault/vaults', name: keyVaultName, groupId: 'vault', zone: 'privatelink${replace(environment().suffixes.keyvaultDns, 'vault', 'vaultcore')}' }
]

resource network 'Microsoft.Network/virtualNetworks@2024-05-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    addressSpace: { addressPrefixes: ['10.0.0.0/16'] }
    subnets: [
      {
        name: 'app'
        properties: {
          addressPrefix: '10.0.1.0/24'
          delegations: [{ name: 'flex-consumption', properties: { serviceName: 'Microsoft.App/environments' } }]
        }
      }
      {
        name: 'private-endpoints'
        properties: { addressPrefix: '10.0.2.0/24', privateEndpointNetworkPolicies: 'Disabled' }
      }
    ]
  }
}

resource zone 'Microsoft.Network/privateDnsZones@2024-06-01' = [
  for endpoint in endpoints: {
    name: endpoint.zone
    location: 'global'
    tags: tags
  }
]

resource zoneLink 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2024-06-01' = [
  for (endpoint, index) in endpoints: {
    parent: zone[index]
    name: name
    location: 'global'
    tags: tags
    properties: { virtualNetwork: { id: network.id }, registrationEnabled: false }
  }
]

resource privateEndpoint 'Microsoft.Network/privateEndpoints@2024-05-01' = [
  for endpoint in endpoints: {
    name: 'pe-${endpoint.groupId}-${name}'
    location: location
    tags: tags
    properties: {
      subnet: { id: network.properties.subnets[1].id }
      privateLinkServiceConnections: [
        { name: endpoint.groupId, properties: { privateLinkServiceId: resourceId(endpoint.type, endpoint.name), groupIds: [endpoint.groupId] } }
      ]
    }
  }
]

resource zoneGroup 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2024-05-01' = [
  for (endpoint, index) in endpoints: {
    parent: privateEndpoint[index]
    name: 'default'
    properties: { privateDnsZoneConfigs: [{ name: endpoint.groupId, properties: { privateDnsZoneId: zone[index].id } }] }
  }
]

@description('The subnet the Function App joins.')
output appSubnetId string = network.properties.subnets[0].id
