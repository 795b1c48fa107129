/**
 * Prints an access token from the local identity provider that `npm start` runs, and nothing else on stdout:
 *   TOKEN=$(npm run -s token -- --role LMS.Admin)
 */
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Agent, fetch } from 'undici';
import { GUID, LOCAL_HOME_TENANT_ID, LOCAL_OTHER_TENANT_ID } from '../local/defaults.js';
import {
  API_USER_SCOPE,
  DEFAULT_LOCAL_USERNAME,
  localIdentityDataDir,
  readIdentityProviderInfo,
  type IdentityProviderInfo,
} from '../local/identity/provider.js';
import { appRootAbove } from '../shared/lib/app-root.js';

// The API's allowance for clock skew (its token validator's), told in the help; the CLI's test holds the two together.
const API_CLOCK_SKEW_MINUTES = 5;

const TOKEN_CLI_USAGE = `Usage: npm run -s token -- [options]

Prints an access token issued by the local identity provider (start it with \`npm start\`).

Options:
  --role <role>        App role for the roles claim; repeat for several roles
  --tenant <tenant>    Tenant id, or 'home' (default: ${LOCAL_HOME_TENANT_ID}) or 'other' (${LOCAL_OTHER_TENANT_ID})
  --user <email>       User principal name (default: ${DEFAULT_LOCAL_USERNAME})
  --name <name>        Display name of the user (default: the part of --user before '@')
  --app                App-only token (client credentials) instead of a user token
  --v2                 v2.0 access token instead of v1.0
  --scope <name>       Delegated scope of a user token (default: ${API_USER_SCOPE})
  --resource <uri>     Another App ID URI of the API to ask for, such as a Teams tab's api://<host>/<clientId>;
                       a v1 token has it as its aud. The stack must be started with it in AUTH_AUDIENCES
  --expires-in <s>     Lifetime in seconds (default: 3600). The API allows ${API_CLOCK_SKEW_MINUTES} minutes of clock skew:
                       it takes a token until that long after it expires, and refuses one issued
                       further ahead than that
  -h, --help           Show this help
`;

export interface TokenRequest {
  tenantId: string;
  kind: 'user' | 'app';
  roles: string[];
  /** username, name and scope are of user tokens only. */
  username: string;
  name?: string;
  scope: string;
  /** The App ID URI asked for; api://<clientId> when not given. */
  resource?: string;
  version: 1 | 2;
  expiresInSeconds?: number;
}

/** What the CLI asks for without options: a v1 token of the default user of the home tenant. */
export const DEFAULT_TOKEN_REQUEST: TokenRequest = {
  tenantId: LOCAL_HOME_TENANT_ID,
  kind: 'user',
  roles: [],
  username: DEFAULT_LOCAL_USERNAME,
  scope: API_USER_SCOPE,
  version: 1,
};

/** A mistake on the command line. */
export class UsageError extends Error {}

// Any non-empty value passes; this only makes the requests well-formed.
const LOCAL_SECRET = 'local-development';
const REQUEST_TIMEOUT_MS = 10_000;

export function parseTokenArguments(args: string[]): { help: true } | { help: false; request: TokenRequest } {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        role: { type: 'string', multiple: true, default: [] },
        tenant: { type: 'string', default: 'home' },
        user: { type: 'string' },
        name: { type: 'string' },
        app: { type: 'boolean' },
        v2: { type: 'boolean' },
        scope: { type: 'string' },
        resource: { type: 'string' },
        'expires-in': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return { help: true };
  if (values.app && (values.user ?? values.name ?? values.scope) !== undefined) {
    throw new UsageError('--user, --name and --scope describe user tokens; leave them out with --app.');
  }
  const badRole = values.role.find((role) => !/^[^\s,]+$/.test(role));
  if (badRole !== undefined) throw new UsageError(`Invalid role '${badRole}': one role per --role, without spaces or commas.`);
  const scope = values.scope ?? API_USER_SCOPE;
  if (!/^[^\s/]+$/.test(scope)) throw new UsageError(`Invalid scope '${scope}': give the scope name only, e.g. ${API_USER_SCOPE}.`);
  const { resource } = values;
  if (resource !== undefined && !/^api:\/\/\S*[^\s/]$/.test(resource)) {
    throw new UsageError(`Invalid --resource '${resource}': give an App ID URI of the API, e.g. api://<host>/<clientId>.`);
  }
  const tenant = values.tenant.toLowerCase();
  const tenantId = tenant === 'home' ? LOCAL_HOME_TENANT_ID : tenant === 'other' ? LOCAL_OTHER_TENANT_ID : tenant;
  if (!GUID.test(tenantId)) throw new UsageError(`Invalid --tenant '${values.tenant}': give a tenant id, 'home' or 'other'.`);
  const expiresIn = values['expires-in'];
  if (expiresIn !== undefined && !/^[1-9]\d{0,7}$/.test(expiresIn)) {
    throw new UsageError(`Invalid --expires-in '${expiresIn}': give a positive number of seconds.`);
  }
  const request: TokenRequest = {
    ...DEFAULT_TOKEN_REQUEST,
    tenantId,
    kind: values.app ? 'app' : 'user',
    roles: values.role,
    scope,
    version: values.v2 ? 2 : 1,
  };
  if (values.user !== undefined) request.username = values.user;
  if (values.name !== undefined) request.name = values.name;
  if (resource !== undefined) request.resource = resource;
  if (expiresIn !== undefined) request.expiresInSeconds = Number(expiresIn);
  return { help: false, request };
}

/** The token endpoint form: password grant for users, client credentials for apps, plus the local extension fields. */
export function tokenRequestForm(request: TokenRequest, clientId: string): URLSearchParams {
  const user = request.kind === 'user';
  const resource = request.resource ?? `api://${clientId}`;
  const form = new URLSearchParams({
    client_id: clientId,
    ...(user
      ? { grant_type: 'password', username: request.username, password: LOCAL_SECRET, scope: `${resource}/${request.scope}` }
      : { grant_type: 'client_credentials', client_secret: LOCAL_SECRET, scope: `${resource}/.default` }),
    token_version: String(request.version),
  });
  if (user && request.name !== undefined) form.set('name', request.name);
  if (request.roles.length > 0) form.set('roles', request.roles.join(' '));
  if (request.expiresInSeconds !== undefined) form.set('expires_in', String(request.expiresInSeconds));
  return form;
}

export async function requestAccessToken(info: IdentityProviderInfo, request: TokenRequest): Promise<string> {
  const ca = await readFile(info.caCertPath, 'utf8').catch((error: unknown) => {
    throw new Error(`Cannot read the identity provider's certificate ${info.caCertPath}: start the API with \`npm start\` again.`, { cause: error });
  });
  const url = `${info.authorityHost}/${encodeURIComponent(request.tenantId)}/oauth2/v2.0/token`;
  // undici's fetch, as the global one cannot be given the provider's own certificate to trust.
  const dispatcher = new Agent({ connect: { ca } });
  const form = tokenRequestForm(request, info.clientId);
  const response = await fetch(url, { method: 'POST', body: form, dispatcher, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    .then(async (answer) => ({ status: answer.status, text: await answer.text() }))
    .catch((error: unknown) => {
      // fetch says only "fetch failed"; its cause names the failure (a timeout is the error itself).
      const reason = ((error as Error).cause ?? error) as Error;
      throw new Error(`Cannot reach the identity provider at ${info.authorityHost} (${reason.message}): is \`npm start\` running?`, { cause: error });
    })
    // The sample server and the webhook listener ask again and again: no kept connection is left behind by each.
    .finally(() => dispatcher.close());
  let body: { access_token?: unknown; error?: unknown; error_description?: unknown };
  try {
    body = JSON.parse(response.text) as typeof body;
  } catch {
    throw new Error(`The identity provider answered HTTP ${response.status} without JSON.`);
  }
  if (response.status !== 200 || typeof body.access_token !== 'string') {
    throw new Error(`The identity provider refused the token request (HTTP ${response.status}): ${String(body.error_description ?? body.error)}`);
  }
  return body.access_token;
}

/** Runs the CLI and returns its exit code. `dataDir` is where provider.json is, by default where `npm start` keeps it. */
export async function runTokenCli(
  args: string[],
  io: { dataDir?: string; stdout: { write(text: string): unknown }; stderr: { write(text: string): unknown } },
): Promise<number> {
  try {
    const command = parseTokenArguments(args);
    if (command.help) {
      io.stdout.write(TOKEN_CLI_USAGE);
      return 0;
    }
    const info = await readIdentityProviderInfo(io.dataDir ?? localIdentityDataDir(appRootAbove(import.meta.url)));
    io.stdout.write(`${await requestAccessToken(info, command.request)}\n`);
    return 0;
  } catch (error) {
    io.stderr.write(`${(error as Error).message}\n`);
    if (error instanceof UsageError) io.stderr.write('Run with --help for the options.\n');
    return 1;
  }
}

const invokedAsScript = process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
if (invokedAsScript) {
  process.exitCode = await runTokenCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr });
}
