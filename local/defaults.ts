import { resolve } from 'node:path';
import { SETTINGS } from '../shared/settings/catalog.js';

// Fixed identities of the embedded stack, so tokens, docs and examples stay stable across machines.
export const LOCAL_HOME_TENANT_ID = '6f1c2a4e-3b5d-4c7e-9a10-1b2c3d4e5f60';
// A second tenant that the local API also accepts, to show that no request crosses tenants.
export const LOCAL_OTHER_TENANT_ID = '9e8d7c6b-5a49-4382-8716-0f1e2d3c4b5a';
export const LOCAL_CLIENT_ID = '0a7c5e3f-2d4b-4f6a-8c1e-3b5d7f9a1c2e';
// The user-assigned managed identity the local Function App runs as, whose token On-Behalf-Of presents (as in Azure).
export const LOCAL_APP_IDENTITY_CLIENT_ID = '4c2e8a1f-6b3d-4f5e-9a7c-2d1e0f3b5a68';
export const DEFAULT_API_PORT = Number(SETTINGS.PORT.default);

/**
 * The folder `npm start` and `npm run token` keep their data in (ignored by git): LOCAL_DATA_DIR if set,
 * so that a second stack, or a test, can run on data of its own; otherwise `.local`. Relative to `root`.
 */
export function localDataDir(root: string, environment: Record<string, string | undefined> = process.env): string {
  return resolve(root, environment.LOCAL_DATA_DIR || SETTINGS.LOCAL_DATA_DIR.default);
}

/** A setting's value, or undefined when it is not given (empty counts as not given). */
export const given = (settings: Record<string, string | undefined>, name: string): string | undefined => settings[name]?.trim() || undefined;

const AUTH_SETTINGS = ['AUTH_TENANT_ID', 'AUTH_CLIENT_ID', 'AUTH_AUTHORITY_HOST', 'AUTH_ALLOWED_TENANTS'];

/** The local identity provider stands in for Entra ID only when no auth setting is given. */
export const embedsIdentityProvider = (settings: Record<string, string | undefined>): boolean => !AUTH_SETTINGS.some((name) => given(settings, name));

/** A GUID as Entra ID writes them: lower-case hex in 8-4-4-4-12 groups. */
export const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
