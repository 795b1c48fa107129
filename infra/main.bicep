// Everything the API needs in Azure, for `azd up` in an empty subscription and `azd provision` after: a resource
// group and, in it, the resources of app.bicep. What the code decides (containers, queues, app settings with a
// value to start from) comes from generated.json, which `npm run settings` writes from the code.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('The azd environment\'s name: it names the resource group and seeds the names of the resources in it.')
param environmentName string

@minLength(1)
@description('The region of every resource; one with Flex Consumption (az functionapp list-flexconsumption-locations).')
@metadata({ azd: { type: 'location' } })
param location string

@minLength(1)
@description('The app registration\'s application (client) id (AUTH_CLIENT_ID): docs/app-registration.md.')
param authClientId string

@description('The home tenant (AUTH_TENANT_ID); empty: the tenant deployed to.')
param authTenantId string = ''

@description('Comma-separated tenant ids accepted besides the home tenant (AUTH_ALLOWED_TENANTS); empty: the home tenant only.')
param authAllowedTenants string = ''

@description('Extra accepted audiences, comma-separated (AUTH_AUDIENCES), e.g. api://<host>/<clientId> for Teams SSO.')
param authAudiences string = ''

@description('The role of a user token without roles (AUTH_DEFAULT_ROLE); empty: none (a 403).')
param authDefaultRole string = ''

@description('Comma-separated origins whose pages may call the API from a browser (Office add-ins, Teams tabs): the Function App\'s CORS.')
param corsAllowedOrigins string = ''

@allowed([512, 2048, 4096])
@description('The memory of each Flex Consumption instance, in MB.')
param instanceMemoryMB int = 2048

@minValue(40)
@maxValue(1000)
@description('The most instances Flex Consumption scales out to.')
param maximumInstanceCount int = 100

@minValue(0)
@description('0: Cosmos DB serverless. Otherwise provisioned throughput: the database\'s autoscale maximum in RU/s (1000 or more), shared by its containers.')
param cosmosAutoscaleMaxThroughput int = 0

@description('Storage, Cosmos DB and Key Vault reached only through private endpoints in a virtual network the Function App joins.')
param privateNetworking bool = false

@description('The object id of a user given the same data roles as the app (to read its data while debugging); empty: nobody.')
param deployerPrincipalId string = ''

@secure()
@description('The key that signs paging cursors (CURSOR_SIGNING_KEY): azd generates it once per environment; it goes to Key Vault only.')
@metadata({ azd: { type: 'generate', config: { length: 64, noSpecial: true } } })
param cursorSigningKey string

@description('Tags of every resource; azd finds the environment\'s resources by azd-env-name.')
var tags = { 'azd-env-name': environmentName }

resource group 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module app 'app.bicep' = {
  scope: group
  params: {
    location: location
    tags: tags
    resourceToken: toLower(uniqueString(subscription().id, environmentName, location))
    authTenantId: empty(authTenantId) ? tenant().tenantId : authTenantId
    authClientId: authClientId
    optionalAppSettings: {
      AUTH_ALLOWED_TENANTS: authAllowedTenants
      AUTH_AUDIENCES: authAudiences
      AUTH_DEFAULT_ROLE: authDefaultRole
    }
    corsAllowedOrigins: filter(map(split(corsAllowedOrigins, ','), origin => trim(origin)), origin => !empty(origin))
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    cosmosAutoscaleMaxThroughput: cosmosAutoscaleMaxThroughput
    privateNetworking: privateNetworking
    deployerPrincipalId: deployerPrincipalId
    cursorSigningKey: cursorSigningKey
  }
}

@description('The region, for azd.')
output AZURE_LOCATION string = location
@description('The tenant deployed to, for azd.')
output AZURE_TENANT_ID string = tenant().tenantId
@description('The resource group, for azd.')
output AZURE_RESOURCE_GROUP string = group.name
@description('The Function App (azd deploys the api service to it).')
output AZURE_FUNCTION_APP_NAME string = app.outputs.functionAppName
@description('The API\'s base URL.')
output API_BASE_URL string = app.outputs.apiBaseUrl
@description('The client id of the managed identity the app runs as.')
output AZURE_MANAGED_IDENTITY_CLIENT_ID string = app.outputs.identityClientId
@description('The object id of that identity: the subject of the app registration\'s federated identity credential (docs/app-registration.md).')
output AZURE_MANAGED_IDENTITY_PRINCIPAL_ID string = app.outputs.identityPrincipalId
@description('The Cosmos DB account.')
output AZURE_COSMOS_ACCOUNT_NAME string = app.outputs.cosmosAccountName
@description('The storage account of the queues and the deployment package.')
output AZURE_STORAGE_ACCOUNT_NAME string = app.outputs.storageAccountName
@description('The Key Vault that holds the cursor signing key.')
output AZURE_KEY_VAULT_NAME string = app.outputs.keyVaultName
