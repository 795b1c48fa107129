/**
 * The provider-info file: what `npm start` writes into the provider's data directory (authority host,
 * tenants, client id, CA certificate path) so that `npm run token` and `npm run sample` can find the running
 * provider, and reading it back with a message that says what to do when it is missing or invalid.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { localDataDir } from '../defaults.js';
import { isFileMissing } from '../tls.js';

/** What `npm start` publishes so that `npm run token` can find the running provider. */
export interface IdentityProviderInfo {
  authorityHost: string;
  tenants: string[];
  clientId: string;
  caCertPath: string;
}

/** Data directory of the provider started by `npm start` from the project at `root`. */
export const localIdentityDataDir = (root: string): string => path.join(localDataDir(root), 'identity');
const PROVIDER_INFO_FILE = 'provider.json';

export async function writeIdentityProviderInfo(dataDir: string, info: IdentityProviderInfo): Promise<string> {
  const file = path.join(dataDir, PROVIDER_INFO_FILE);
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${JSON.stringify(info, null, 2)}\n`);
  return file;
}

const identityProviderInfoSchema = z.object({
  authorityHost: z.string(),
  tenants: z.array(z.string()),
  clientId: z.string(),
  caCertPath: z.string(),
});

export async function readIdentityProviderInfo(dataDir: string): Promise<IdentityProviderInfo> {
  const file = path.resolve(dataDir, PROVIDER_INFO_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (isFileMissing(error)) {
      throw new Error(`No local identity provider found (${file} is missing): start the API with \`npm start\` first.`, { cause: error });
    }
    throw error;
  }
  const parsed = identityProviderInfoSchema.safeParse(parseJsonOrUndefined(text));
  if (!parsed.success) {
    throw new Error(`${file} is not a valid identity provider description: start the API with \`npm start\` again.`);
  }
  return parsed.data;
}

function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
