/**
 * The token credential of an identity-based connection, made as Azure's Functions host makes its own from
 * `<connection>__credential` and `__clientId` (Microsoft.Extensions.Azure's ClientFactory), so that the app's
 * clients and the triggers of the same connection sign in as one identity.
 */
import type { TokenCredential } from '@azure/identity';
import type { ConnectionIdentity } from './read.js';

export async function connectionCredential({ managedIdentity, clientId }: ConnectionIdentity): Promise<TokenCredential> {
  // The identity library loads only for an identity-based connection, in a chunk of its own.
  const { DefaultAzureCredential, ManagedIdentityCredential } = await import('@azure/identity');
  return managedIdentity ? new ManagedIdentityCredential({ clientId }) : new DefaultAzureCredential({ managedIdentityClientId: clientId });
}
