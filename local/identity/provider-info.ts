/** provider.json: what `npm start` publishes so that `npm run token` and `npm run sample` find the running provider. */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { localDataDir } from '../defaults.js';
import { isFileMissing } from '../tls.js';

const identityProviderInfoSchema = z.object({ authorityHost: z.string(), tenants: z.array(z.string()), clientId: z.string(), caCertPath: z.string() });
export type IdentityProviderInfo = z.infer<typeof identityProviderInfoSchema>;

/** Data directory of the provider started by `npm start` from the project at `root`. */
export const localIdentityDataDir = (root: string): string => path.join(localDataDir(root), 'identity');

export async function writeIdentityProviderInfo(dataDir: string, info: IdentityProviderInfo): Promise<string> {
  const file = path.join(dataDir, 'provider.json');
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${JSON.stringify(info, null, 2)}\n`);
  return file;
}

export async function readIdentityProviderInfo(dataDir: string): Promise<IdentityProviderInfo> {
  const file = path.resolve(dataDir, 'provider.json');
  const text = await readFile(file, 'utf8').catch((error: unknown) => {
    if (!isFileMissing(error)) throw error;
    throw new Error(`No local identity provider found (${file} is missing): run \`npm start\` first, with the same LOCAL_DATA_DIR.`, { cause: error });
  });
  try {
    return identityProviderInfoSchema.parse(JSON.parse(text));
  } catch {
    throw new Error(`${file} is not a valid identity provider description: start the API with \`npm start\` again.`);
  }
}
