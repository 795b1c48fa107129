// The Key Vault (RBAC, no access policies) that holds the cursor signing key; the app reads it through a Key Vault
// reference as its identity (Key Vault Secrets User), and no output or plain app setting carries it.

@description('The region.')
param location string

@description('Tags.')
param tags object

@description('The vault\'s name.')
param name string

@secure()
@description('CURSOR_SIGNING_KEY.')
param cursorSigningKey string

@description('The identity that reads the secret: its resource id, which names the assignment (known before it exists).')
param readerId string

@description('That identity\'s object id.')
param readerPrincipalId string

@description('Reached through a private endpoint only.')
param privateNetworking bool

@description('Key Vault Secrets User: reads secret values, nothing else.')
var secretsUserRoleId = '4633458b-17de-408a-b874-0445c86b69e6'

resource vault 'Microsoft.KeyVault/vaults@2024-11-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    tenantId: tenant().tenantId
    sku: { family: 'A', name: 'standard' }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 7
    publicNetworkAccess: privateNetworking ? 'Disabled' : 'Enabled'
    networkAcls: { defaultAction: privateNetworking ? 'Deny' : 'Allow', bypass: 'None' }
  }
}

resource cursorSigningKeySecret 'Microsoft.KeyVault/vaults/secrets@2024-11-01' = {
  parent: vault
  name: 'cursor-signing-key'
  properties: { value: cursorSigningKey, contentType: 'base64' }
}

resource secretsUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, readerId, secretsUserRoleId)
  scope: vault
  properties: {
    principalId: readerPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', secretsUserRoleId)
  }
}

@description('The vault\'s name.')
output name string = vault.name
@description('The secret\'s name (not its value).')
output cursorSigningKeySecretName string = cursorSigningKeySecret.name
