/**
 * Every setting the app and its local stack read, once: `npm run settings` writes
 * local.settings.example.json, the table of docs/configuration.md and the app settings and queues of
 * infra/generated.json (which the Bicep of infra/ loads) from this list, the code takes its defaults
 * from it, and `npm test` fails when any of them is not what the list would write, or when a binding
 * names a setting the list does not have. Adding a setting is one entry here.
 */

export interface Setting {
  /**
   * In the Function App's app settings: required (it cannot serve without; infra/ sets it), optional, platform (Azure
   * sets it elsewhere and refuses it as an app setting, while `func start` needs it), never (the local stack's own),
   * or retired (a name the app no longer reads: given, it is a configuration error naming `replacedBy`).
   */
  azure: 'required' | 'optional' | 'platform' | 'never' | 'retired';
  /** The value used when the setting is not given. */
  default?: string;
  /** One line of Markdown for the table of docs/configuration.md. */
  description: string;
  /** Read from the environment of `npm start` (and `npm run token`, `npm run sample`) only, not from local.settings.json. */
  environmentOnly?: true;
  /** local.settings.json holds it as this field of `Host`, as `func start` reads it, not in `Values`. */
  hostField?: 'CORS' | 'CORSCredentials';
  /** A retired setting's replacement, as its configuration error and the table say it. */
  replacedBy?: string;
  /** Names a storage queue the app sends to and a trigger reads: deployment creates it, and its `-poison` queue. */
  queue?: true;
}

// The contract's database settings, which the one connection setting of the change feed trigger's binding replaced.
const INSTEAD_OF_COSMOS_ENDPOINT_AND_KEY =
  'COSMOS_CONNECTION as AccountEndpoint=…;AccountKey=…; (or, for a managed identity, COSMOS_CONNECTION__accountEndpoint)';

export const SETTINGS = {
  FUNCTIONS_WORKER_RUNTIME: {
    azure: 'platform',
    default: 'node',
    description: "the Functions language worker, which `func start` needs; in Azure, the Flex Consumption app's `functionAppConfig.runtime` (infra/)",
  },
  AzureWebJobsStorage: {
    azure: 'required',
    description: 'the storage account of the queues: a connection string, or identity-based `AzureWebJobsStorage__queueServiceUri` instead',
  },
  AzureWebJobsStorage__credential: {
    azure: 'optional',
    description:
      "`managedidentity`: the identity-based storage connection signs in as the Function App's managed identity only (the app's queue client " +
      'and the host alike); without it, `DefaultAzureCredential`, whose managed identity is the same',
  },
  AzureWebJobsStorage__clientId: {
    azure: 'optional',
    description: 'the client id of the user-assigned managed identity the identity-based storage connection signs in as (default: the system-assigned one)',
  },
  AUTH_TENANT_ID: { azure: 'required', description: 'the home tenant (GUID)' },
  AUTH_CLIENT_ID: { azure: 'required', description: "the API's application (client) id; audiences `api://<id>` and `<id>`" },
  AUTH_ALLOWED_TENANTS: { azure: 'optional', description: 'comma-separated tenant GUIDs accepted in multi-tenant mode (default: the home tenant)' },
  AUTH_AUDIENCES: { azure: 'optional', description: 'extra accepted audiences, comma-separated (e.g. `api://<host>/<clientId>` for Teams SSO)' },
  AUTH_AUTHORITY_HOST: { azure: 'optional', default: 'https://login.microsoftonline.com', description: 'the identity provider (sovereign clouds, others)' },
  AUTH_DEFAULT_ROLE: { azure: 'optional', description: 'the role given to a user token without roles (default none: 403)' },
  AUTH_CLIENT_SECRET: { azure: 'optional', description: 'the client secret On-Behalf-Of signs in with, for `GET /api/users?source=directory`' },
  AUTH_CLIENT_CERTIFICATE_PATH: { azure: 'optional', description: 'instead of the secret (one of the three): a PEM file with the private key and certificate' },
  AUTH_MANAGED_IDENTITY_CLIENT_ID: {
    azure: 'optional',
    description:
      "instead of a secret or a certificate, and in Azure the default (infra/ sets it): the client id of the app's user-assigned managed identity, " +
      'whose token for `api://AzureADTokenExchange` On-Behalf-Of presents as its client assertion; the app registration trusts that identity ' +
      'through a federated identity credential ([app-registration.md](app-registration.md))',
  },
  GRAPH_BASE_URL: {
    azure: 'optional',
    default: 'https://graph.microsoft.com',
    description: "Microsoft Graph; a national cloud's (`https://graph.microsoft.us`, …) is also the resource whose `User.Read.All` is asked for",
  },
  GRAPH_RESOURCE: {
    azure: 'optional',
    description: "the resource whose `User.Read.All` On-Behalf-Of asks for, when not `GRAPH_BASE_URL`'s origin (`npm start` sets it for its Graph stand-in)",
  },
  COSMOS_CONNECTION: {
    azure: 'optional',
    description:
      'the Cosmos DB account as a connection string (`AccountEndpoint=https://…;AccountKey=…;`), for the app and for the change feed ' +
      "trigger, which binds to it (`connection: 'COSMOS_CONNECTION'`); in Azure, `COSMOS_CONNECTION__accountEndpoint` instead",
  },
  COSMOS_CONNECTION__accountEndpoint: {
    azure: 'optional',
    description:
      "instead of `COSMOS_CONNECTION` (one of the two is required): the account's endpoint, reached as the Function App's managed " +
      'identity by the app and the trigger alike; `COSMOS_CONNECTION__clientId` names a user-assigned identity',
  },
  COSMOS_CONNECTION__clientId: {
    azure: 'optional',
    description: 'the client id of the user-assigned managed identity `COSMOS_CONNECTION__accountEndpoint` signs in as',
  },
  COSMOS_CONNECTION__credential: {
    azure: 'optional',
    description: '`managedidentity`: `COSMOS_CONNECTION__accountEndpoint` signs in as the managed identity only, as `AzureWebJobsStorage__credential` does',
  },
  COSMOS_DATABASE: {
    azure: 'required',
    default: 'lms',
    description:
      "the database; the change feed trigger's binding reads `%COSMOS_DATABASE%`, and the app reads it with no default of its own (`npm start` uses `lms`)",
  },
  COSMOS_ENDPOINT: {
    azure: 'retired',
    description: "the contract's database account endpoint",
    replacedBy: INSTEAD_OF_COSMOS_ENDPOINT_AND_KEY,
  },
  COSMOS_KEY: {
    azure: 'retired',
    description: "the contract's database account key (without it, the managed identity)",
    replacedBy: INSTEAD_OF_COSMOS_ENDPOINT_AND_KEY,
  },
  CURSOR_SIGNING_KEY: { azure: 'required', description: 'at least 32 random bytes, base64 (`openssl rand -base64 32`): signs paging cursors (below)' },
  RAG_QUEUE_NAME: {
    azure: 'required',
    default: 'rag-index-jobs',
    queue: true,
    description: "the RAG jobs' queue; the worker's trigger binding reads `%RAG_QUEUE_NAME%`",
  },
  WEBHOOKS_QUEUE_NAME: {
    azure: 'required',
    default: 'webhook-deliveries',
    queue: true,
    description: "the webhook deliveries' queue; the `webhooks-deliver` trigger binding reads `%WEBHOOKS_QUEUE_NAME%`",
  },
  WEBHOOKS_SWEEP_SCHEDULE: {
    azure: 'required',
    default: '*/30 * * * * *',
    description: "the `webhooks-sweep` timer's NCRONTAB schedule (`%WEBHOOKS_SWEEP_SCHEDULE%`)",
  },
  WEBHOOKS_RETRY_SCHEDULE: { azure: 'optional', default: '5s,5m,30m,2h,5h,10h,10h', description: 'the waits before each retry of a delivery, comma-separated' },
  WEBHOOKS_ALLOW_LOOPBACK: {
    azure: 'never',
    default: 'false',
    description:
      '`true` lets subscriptions use plain http to this machine: `npm start` sets it; where `WEBSITE_INSTANCE_ID` is set (Azure) it is a configuration error',
  },
  EMBEDDINGS_ENDPOINT: {
    azure: 'optional',
    description:
      "an OpenAI-compatible embeddings API (`https://api.openai.com/v1`, or an Azure OpenAI deployment's full `…/embeddings?api-version=…` URL); " +
      'plain http only to localhost, and a configuration error where `WEBSITE_INSTANCE_ID` is set (Azure)',
  },
  EMBEDDINGS_API_KEY: { azure: 'optional', description: "the embeddings API's key (sent as `api-key` to Azure OpenAI)" },
  EMBEDDINGS_MODEL: { azure: 'optional', description: 'the embedding model, e.g. `text-embedding-3-small`' },
  CORS_ALLOWED_ORIGINS: {
    azure: 'never',
    hostField: 'CORS',
    description: "local host only: comma-separated origins whose pages may call the API from a browser, or `*`; in Azure, the Function App's CORS setting",
  },
  CORS_SUPPORT_CREDENTIALS: {
    azure: 'never',
    hostField: 'CORSCredentials',
    default: 'false',
    description: 'local host only: `true` allows credentials (cookies) on cross-origin calls; the API needs none',
  },
  LOCAL_QUEUE_MESSAGE_LEASE: {
    azure: 'never',
    default: '600',
    description: "local host only: seconds (2 to 600) a queue message stays invisible while its function runs, renewed at half time, as Azure's",
  },
  PORT: {
    azure: 'never',
    environmentOnly: true,
    default: '7071',
    description: "the API's port (`npm start`; `npm run sample` and `webhooks:listen` call it there)",
  },
  LOCAL_IDP_PORT: { azure: 'never', environmentOnly: true, default: '7072', description: "the local identity provider's port (`npm start`)" },
  LOCAL_DATA_DIR: { azure: 'never', environmentOnly: true, default: '.local', description: "the local stack's data folder (`npm start`, `npm run token`)" },
  SAMPLE_PORT: { azure: 'never', environmentOnly: true, default: '3000', description: "the task-pane sample's port (`npm run sample`)" },
  WEBHOOKS_LISTEN_PORT: {
    azure: 'never',
    environmentOnly: true,
    default: '7073',
    description: "the port of `npm run webhooks:listen`'s receiver (its `--port` wins)",
  },
} as const satisfies Record<string, Setting>;

/** A configuration error for each retired setting that is given (empty counts as not given), naming what replaces it. */
export function retiredSettingsGiven(env: Record<string, string | undefined>): string[] {
  return (Object.entries(SETTINGS) as [string, Setting][])
    .filter(([name, setting]) => setting.azure === 'retired' && env[name]?.trim())
    .map(([name, setting]) => `${name} is retired: set ${setting.replacedBy} instead`);
}
