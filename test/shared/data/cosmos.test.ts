/** The app's Cosmos DB client as the deployed app makes it (shared/data/cosmos.ts), given an account it cannot reach. */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';

// An account name that never resolves (RFC 6761's .invalid), with a well-formed key so that only the name is wrong.
process.env.COSMOS_CONNECTION = `AccountEndpoint=https://lms-account.invalid/;AccountKey=${randomBytes(64).toString('base64')};`;
process.env.COSMOS_DATABASE = 'lms';
const { container } = await import('../../../shared/data/cosmos.js');

describe("the app's Cosmos DB client", () => {
  // With endpoint discovery on, the client tried such an account once a second for 120 s: every request hung that long before its 503.
  it('fails a read of an account it cannot reach with the network error, at once rather than after two minutes of retries', async () => {
    const tenantData = await container('tenantData');
    await expect(tenantData.item('PRJ-1001', 'any').read()).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });
});
