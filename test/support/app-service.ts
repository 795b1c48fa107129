import { vi } from 'vitest';
import type { IdentityProvider } from '../../local/identity/provider.js';

/**
 * An App Service instance's environment, for the test that called it (undone by vi.unstubAllEnvs):
 * the managed identity endpoint of the local identity provider, and no other credential of
 * DefaultAzureCredential's chain, so that @azure/identity's own App Service path runs.
 */
export function onAppService(provider: IdentityProvider): void {
  for (const [name, value] of Object.entries(provider.managedIdentity!)) vi.stubEnv(name, value);
  for (const name of ['AZURE_CLIENT_ID', 'AZURE_TENANT_ID', 'AZURE_CLIENT_SECRET', 'AZURE_FEDERATED_TOKEN_FILE', 'MSI_ENDPOINT']) vi.stubEnv(name, undefined);
}
