// Logs and traces: a Log Analytics workspace and Application Insights over it, both taking Entra ID only
// (local auth off), so telemetry is sent as the app's identity with Monitoring Metrics Publisher.

@description('The region.')
param location string

@description('Tags.')
param tags object

@description('The workspace\'s name.')
param workspaceName string

@description('Application Insights\' name.')
param applicationInsightsName string

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: workspaceName
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
    features: { disableLocalAuth: true }
  }
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: applicationInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    DisableLocalAuth: true
  }
}

@description('Where telemetry goes (an address and the resource\'s id, no credential: with local auth off it takes Entra tokens only).')
output connectionString string = applicationInsights.properties.ConnectionString
