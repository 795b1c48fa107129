// The Flex Consumption plan and Function App: Node.js 22, running as the user-assigned identity, its code in a
// blob container that identity reaches, every app setting given here (nothing is set by hand, and a provision
// puts back exactly these), and the CORS origins of the add-ins.

@description('The region.')
param location string

@description('Tags.')
param tags object

@description('Seeds the names.')
param resourceToken string

@description('The user-assigned identity the app runs as.')
param identityId string

@description('The memory of each instance, in MB.')
param instanceMemoryMB int

@description('The most instances.')
param maximumInstanceCount int

@description('The blob container of the deployment package.')
param deploymentContainerUrl string

@description('Origins allowed to call the API from a browser.')
param corsAllowedOrigins string[]

@description('The delegated subnet the app joins; empty: none.')
param subnetId string

@description('Every app setting.')
param appSettings object

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: 'plan-${resourceToken}'
  location: location
  tags: tags
  kind: 'functionapp'
  sku: { tier: 'FlexConsumption', name: 'FC1' }
  properties: { reserved: true }
}

resource site 'Microsoft.Web/sites@2024-04-01' = {
  name: 'func-${resourceToken}'
  location: location
  // azd deploy finds the api service's target by this tag.
  tags: union(tags, { 'azd-service-name': 'api' })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identityId}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    keyVaultReferenceIdentity: identityId
    virtualNetworkSubnetId: empty(subnetId) ? null : subnetId
    siteConfig: {
      minTlsVersion: '1.2'
      http20Enabled: true
      // The token travels in the Authorization header, never in a cookie: no credentials.
      cors: { allowedOrigins: corsAllowedOrigins, supportCredentials: false }
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: deploymentContainerUrl
          authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: identityId }
        }
      }
      scaleAndConcurrency: { instanceMemoryMB: instanceMemoryMB, maximumInstanceCount: maximumInstanceCount }
      runtime: { name: 'node', version: '22' }
    }
  }
}

resource settings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: site
  name: 'appsettings'
  properties: appSettings
}

@description('The app\'s name.')
output name string = site.name
@description('The API\'s base URL.')
output apiBaseUrl string = 'https://${site.properties.defaultHostName}/api'
