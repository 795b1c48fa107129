import { z } from 'zod';
import { ConfigurationError } from '../errors.js';
import { isRole, type Role } from '../roles.js';
import { retiredSettingsGiven, SETTINGS } from './catalog.js';

/** The contract's queue for RAG jobs; the queue trigger binds to `%RAG_QUEUE_NAME%`, so a deployment sets it too. */
export const DEFAULT_RAG_QUEUE_NAME = SETTINGS.RAG_QUEUE_NAME.default;
/** The queue that drives webhook deliveries; its trigger binds to `%WEBHOOKS_QUEUE_NAME%`. */
export const DEFAULT_WEBHOOKS_QUEUE_NAME = SETTINGS.WEBHOOKS_QUEUE_NAME.default;
/** How often the sweep looks for events and deliveries whose queue message never came: every half minute. */
export const DEFAULT_WEBHOOKS_SWEEP_SCHEDULE = SETTINGS.WEBHOOKS_SWEEP_SCHEDULE.default;

export interface AuthSettings {
  homeTenantId: string;
  allowedTenants: string[];
  clientId: string;
  audiences: string[];
  authorityHost: string;
  defaultRole: Role | undefined;
}

/**
 * How an identity-based connection signs in, as Azure's Functions host reads `<connection>__credential` and
 * `<connection>__clientId` for its triggers, so that the app signs in as the same identity they do.
 */
export interface ConnectionIdentity {
  /** `__credential=managedidentity`: the managed identity and nothing else; otherwise DefaultAzureCredential's chain. */
  managedIdentity: boolean;
  /** `__clientId`: the user-assigned managed identity; without it, the system-assigned one. */
  clientId: string | undefined;
}

/** The database account, as the change feed trigger's `COSMOS_CONNECTION` names it too: one setting for both. */
export type CosmosConnection =
  /** A connection string with the account's key (`AccountEndpoint=…;AccountKey=…;`): locally, or where keys are allowed. */
  | { connectionString: string }
  /** Identity-based (`COSMOS_CONNECTION__accountEndpoint`): the app signs in as its managed identity. */
  | ({ accountEndpoint: string } & ConnectionIdentity);

export interface CosmosSettings {
  connection: CosmosConnection;
  database: string;
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

function httpsOrigin(name: string, value: string, problems: string[]): string {
  try {
    const url = new URL(value);
    if (url.protocol !== 'https:') problems.push(`${name} must be an https URL`);
    return url.origin;
  } catch {
    problems.push(`${name} is not a URL`);
    return value;
  }
}

function readAuthSettings(env: NodeJS.ProcessEnv): AuthSettings {
  const problems: string[] = [];
  const homeTenantId = env.AUTH_TENANT_ID?.trim() ?? '';
  const clientId = env.AUTH_CLIENT_ID?.trim() ?? '';
  if (!homeTenantId) problems.push('AUTH_TENANT_ID is not set');
  else if (!z.regexes.guid.test(homeTenantId.toLowerCase())) problems.push('AUTH_TENANT_ID is not a GUID');
  if (!clientId) problems.push('AUTH_CLIENT_ID is not set');
  const allowedTenants = list(env.AUTH_ALLOWED_TENANTS).map((tenant) => tenant.toLowerCase());
  for (const tenant of allowedTenants) if (!z.regexes.guid.test(tenant)) problems.push(`AUTH_ALLOWED_TENANTS has "${tenant}", which is not a GUID`);
  const defaultRole = env.AUTH_DEFAULT_ROLE?.trim() || undefined;
  if (defaultRole && !isRole(defaultRole)) problems.push(`AUTH_DEFAULT_ROLE "${defaultRole}" is not one of the app roles`);
  const authorityHost = httpsOrigin('AUTH_AUTHORITY_HOST', env.AUTH_AUTHORITY_HOST?.trim() || SETTINGS.AUTH_AUTHORITY_HOST.default, problems);
  if (problems.length) throw new ConfigurationError(problems);
  return {
    homeTenantId: homeTenantId.toLowerCase(),
    allowedTenants: allowedTenants.length ? allowedTenants : [homeTenantId.toLowerCase()],
    clientId,
    audiences: [`api://${clientId}`, clientId, ...list(env.AUTH_AUDIENCES)],
    authorityHost,
    defaultRole: defaultRole as Role | undefined,
  };
}

/**
 * The confidential client's credential for On-Behalf-Of: a client secret, a certificate file, or a managed identity
 * whose token is the client assertion (a federated identity credential of the app registration trusts it).
 */
export type OnBehalfOfCredential = { secret: string } | { certificatePath: string } | { managedIdentityClientId: string };

/** On-Behalf-Of's credential settings, of which one is given. */
export const ON_BEHALF_OF_CREDENTIALS = ['AUTH_CLIENT_SECRET', 'AUTH_CLIENT_CERTIFICATE_PATH', 'AUTH_MANAGED_IDENTITY_CLIENT_ID'] as const;

function readOnBehalfOfCredential(env: NodeJS.ProcessEnv): OnBehalfOfCredential {
  const [secret, certificatePath, managedIdentityClientId] = ON_BEHALF_OF_CREDENTIALS.map((name) => env[name]?.trim());
  const given = ON_BEHALF_OF_CREDENTIALS.filter((name) => env[name]?.trim());
  if (given.length > 1) throw new ConfigurationError([`set one of ${ON_BEHALF_OF_CREDENTIALS.join(', ')}, not ${given.join(' and ')}`]);
  if (secret) return { secret };
  if (certificatePath) return { certificatePath };
  if (managedIdentityClientId) return { managedIdentityClientId };
  throw new ConfigurationError([`${ON_BEHALF_OF_CREDENTIALS.join(', ')}: none is set (On-Behalf-Of needs one)`]);
}

export interface GraphSettings {
  baseUrl: string;
  /** The resource whose delegated permissions are asked for, e.g. https://graph.microsoft.com. */
  resource: string;
}

function readGraphSettings(env: NodeJS.ProcessEnv): GraphSettings {
  let url: URL;
  try {
    url = new URL(env.GRAPH_BASE_URL?.trim() || SETTINGS.GRAPH_BASE_URL.default);
  } catch {
    throw new ConfigurationError(['GRAPH_BASE_URL is not a URL']);
  }
  // A national cloud's Graph is its own resource; a stand-in that plays the global one says so in GRAPH_RESOURCE.
  const resource = env.GRAPH_RESOURCE?.trim() || url.origin;
  return { baseUrl: url.href.replace(/\/$/, ''), resource };
}

export interface QueueSettings {
  /** A storage connection string, or (identity-based connection) the queue service URI. */
  connection: { connectionString: string } | ({ serviceUri: string } & ConnectionIdentity);
  ragQueueName: string;
  webhooksQueueName: string;
}

function readQueueSettings(env: NodeJS.ProcessEnv): QueueSettings {
  const connectionString = env.AzureWebJobsStorage?.trim();
  const serviceUri = env.AzureWebJobsStorage__queueServiceUri?.trim();
  const names = {
    ragQueueName: env.RAG_QUEUE_NAME?.trim() || DEFAULT_RAG_QUEUE_NAME,
    webhooksQueueName: env.WEBHOOKS_QUEUE_NAME?.trim() || DEFAULT_WEBHOOKS_QUEUE_NAME,
  };
  const problems: string[] = [];
  const identity = connectionIdentity(env, 'AzureWebJobsStorage', problems);
  if (!connectionString && !serviceUri) problems.push('AzureWebJobsStorage (or AzureWebJobsStorage__queueServiceUri) is not set');
  if (problems.length) throw new ConfigurationError(problems);
  return { connection: connectionString ? { connectionString } : { serviceUri: serviceUri!, ...identity }, ...names };
}

/** `<connection>__credential` and `__clientId`; a credential the app cannot make is a problem. */
function connectionIdentity(env: NodeJS.ProcessEnv, connection: string, problems: string[]): ConnectionIdentity {
  const credential = env[`${connection}__credential`]?.trim().toLowerCase();
  if (credential && credential !== 'managedidentity') problems.push(`${connection}__credential must be managedidentity when it is set`);
  return { managedIdentity: credential === 'managedidentity', clientId: env[`${connection}__clientId`]?.trim() || undefined };
}

const DURATION = /^(\d{1,9})(ms|s|m|h)$/;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/**
 * `WEBHOOKS_RETRY_SCHEDULE` as the waits before each retry of a delivery, in milliseconds: durations
 * such as 5s, 10m or 2h, comma-separated. Unset or blank is the contract's schedule (5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h and 10 h); any item that is not a duration, an empty one included, is a
 * configuration error naming the item, never a fallback.
 */
export function parseRetrySchedule(value: string | undefined): number[] {
  return durations(value?.trim() ? value : SETTINGS.WEBHOOKS_RETRY_SCHEDULE.default).map((duration) => {
    const match = DURATION.exec(duration);
    if (!match) throw new ConfigurationError([`WEBHOOKS_RETRY_SCHEDULE has "${duration}", which is not a duration such as 5s, 10m or 2h`]);
    return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  });
}

/** The items between the commas, each of which must be a duration: an empty one (`1s,,2s`, a trailing comma) is not. */
function durations(value: string): string[] {
  return value.split(',').map((item) => item.trim());
}

export interface WebhookSettings {
  /** The waits before each retry of a delivery, in milliseconds; after the last, the delivery is Failed. */
  retrySchedule: number[];
  /** Plain http to this machine, for receivers on a developer's laptop; never in Azure. */
  allowLoopback: boolean;
}

function readWebhookSettings(env: NodeJS.ProcessEnv): WebhookSettings {
  const retrySchedule = parseRetrySchedule(env.WEBHOOKS_RETRY_SCHEDULE);
  const allowLoopback = env.WEBHOOKS_ALLOW_LOOPBACK?.trim().toLowerCase() === 'true';
  // Azure sets WEBSITE_INSTANCE_ID on every instance: there, loopback would be the instance itself.
  if (allowLoopback && env.WEBSITE_INSTANCE_ID?.trim())
    throw new ConfigurationError(["WEBHOOKS_ALLOW_LOOPBACK=true is for a developer's machine and must not be set in Azure (WEBSITE_INSTANCE_ID is set)"]);
  return { retrySchedule, allowLoopback };
}

export interface EmbeddingsSettings {
  /**
   * An OpenAI-style base URL (`https://api.openai.com/v1`, requests go to `<base>/embeddings`), or a full URL
   * ending in `/embeddings` (an Azure OpenAI deployment's, with its `api-version` query).
   */
  endpoint: string;
  apiKey?: string;
  /** Sent as `model`; OpenAI needs it, an Azure deployment already names its model. */
  model?: string;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Undefined when EMBEDDINGS_ENDPOINT is not set: embeddings are optional. */
export function readEmbeddingsSettings(env: NodeJS.ProcessEnv): EmbeddingsSettings | undefined {
  const endpoint = env.EMBEDDINGS_ENDPOINT?.trim();
  if (!endpoint) return undefined;
  const problems: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(endpoint);
  } catch {
    problems.push('EMBEDDINGS_ENDPOINT is not a URL');
  }
  // The key would travel in the clear; plain HTTP is for a stand-in on this machine.
  if (url && url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    problems.push('EMBEDDINGS_ENDPOINT must be an https URL (plain http only on localhost)');
  } else if (url?.protocol === 'http:' && env.WEBSITE_INSTANCE_ID?.trim()) {
    // Azure sets WEBSITE_INSTANCE_ID on every instance (as for WEBHOOKS_ALLOW_LOOPBACK): a stand-in on localhost is a developer's.
    problems.push("EMBEDDINGS_ENDPOINT over plain http is for a developer's machine and must not be set in Azure (WEBSITE_INSTANCE_ID is set)");
  }
  // Azure answers a bare 404 without it, which says nothing about why.
  if (url && url.pathname.includes('/openai/deployments/') && !url.searchParams.has('api-version')) {
    problems.push('EMBEDDINGS_ENDPOINT names an Azure OpenAI deployment but has no api-version query (e.g. ?api-version=2024-10-21)');
  }
  const apiKey = env.EMBEDDINGS_API_KEY?.trim() || undefined;
  // fetch would refuse such a header on every request, which would read as a service that cannot be reached.
  if (apiKey && !/^[\x21-\x7e]+$/.test(apiKey)) problems.push('EMBEDDINGS_API_KEY has characters an HTTP header cannot carry (spaces, or beyond ASCII)');
  if (problems.length) throw new ConfigurationError(problems);
  return { endpoint, apiKey, model: env.EMBEDDINGS_MODEL?.trim() || undefined };
}

/** The key that signs paging cursors, so that a client can neither forge nor edit one. */
function readCursorSigningKey(env: NodeJS.ProcessEnv): Buffer {
  const value = env.CURSOR_SIGNING_KEY?.trim();
  if (!value) throw new ConfigurationError(['CURSOR_SIGNING_KEY is not set (at least 32 random bytes, base64)']);
  const key = Buffer.from(value, 'base64');
  if (key.length < 32) throw new ConfigurationError(['CURSOR_SIGNING_KEY must hold at least 32 bytes, base64-encoded']);
  return key;
}

/** The app setting of the database connection, which the change feed trigger binds to (`connection`), and of its database. */
export const COSMOS_CONNECTION = 'COSMOS_CONNECTION';

function readCosmosSettings(env: NodeJS.ProcessEnv): CosmosSettings {
  // The retired settings are the contract's COSMOS_ENDPOINT and COSMOS_KEY: given, they would be a database silently not used.
  const problems: string[] = retiredSettingsGiven(env);
  const connectionString = env[COSMOS_CONNECTION]?.trim();
  const accountEndpoint = env[`${COSMOS_CONNECTION}__accountEndpoint`]?.trim();
  const database = env.COSMOS_DATABASE?.trim();
  if (connectionString && accountEndpoint) problems.push(`set ${COSMOS_CONNECTION} or ${COSMOS_CONNECTION}__accountEndpoint, not both`);
  else if (connectionString && !/(^|;)\s*AccountEndpoint=https:\/\/[^;]+/i.test(connectionString))
    problems.push(`${COSMOS_CONNECTION} is not a connection string with an https AccountEndpoint`);
  else if (connectionString && !/(^|;)\s*AccountKey=[^;]+/i.test(connectionString))
    problems.push(`${COSMOS_CONNECTION} has no AccountKey (with a managed identity, set ${COSMOS_CONNECTION}__accountEndpoint instead)`);
  else if (accountEndpoint) httpsOrigin(`${COSMOS_CONNECTION}__accountEndpoint`, accountEndpoint, problems);
  else if (!connectionString) problems.push(`${COSMOS_CONNECTION} (or ${COSMOS_CONNECTION}__accountEndpoint) is not set`);
  const identity = connectionIdentity(env, COSMOS_CONNECTION, problems);
  // The trigger's binding names %COSMOS_DATABASE%: the app reads the same setting, with no default of its own.
  if (!database) problems.push('COSMOS_DATABASE is not set');
  if (problems.length) throw new ConfigurationError(problems);
  const connection: CosmosConnection = connectionString ? { connectionString } : { accountEndpoint: accountEndpoint!, ...identity };
  return { connection, database: database! };
}

/** Reads a group of settings once; a bad group fails every time it is asked for, never falls back. */
function memoized<T>(read: (env: NodeJS.ProcessEnv) => T): () => T {
  let result: { value: T } | { error: unknown } | undefined;
  return () => {
    if (!result) {
      try {
        result = { value: read(process.env) };
      } catch (error) {
        result = { error };
      }
    }
    if ('error' in result) throw result.error;
    return result.value;
  };
}

export const authSettings = memoized(readAuthSettings);
export const cosmosSettings = memoized(readCosmosSettings);
export const onBehalfOfCredential = memoized(readOnBehalfOfCredential);
export const graphSettings = memoized(readGraphSettings);
export const queueSettings = memoized(readQueueSettings);
export const cursorSigningKey = memoized(readCursorSigningKey);
export const webhookSettings = memoized(readWebhookSettings);
/** Undefined when no embeddings endpoint is configured: they are optional. */
export const embeddingsSettings = memoized(readEmbeddingsSettings);
export { readAuthSettings, readCosmosSettings, readCursorSigningKey, readGraphSettings, readOnBehalfOfCredential, readQueueSettings, readWebhookSettings };

/** What is wrong with the settings every instance needs, read as the first request would read them: nothing when all is well. */
export function settingsProblems(): string[] {
  return [authSettings, cosmosSettings, queueSettings, cursorSigningKey, webhookSettings, embeddingsSettings].flatMap((read) => {
    try {
      read();
      return [];
    } catch (error) {
      if (error instanceof ConfigurationError) return error.problems;
      throw error;
    }
  });
}
