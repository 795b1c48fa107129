/**
 * `npm run sample`: serves the task-pane sample (samples/task-pane) on http://localhost:3000
 * (SAMPLE_PORT overrides), an origin of its own, so that the page calls the API the way an add-in does:
 * from another origin, through CORS. Inside Office the page gets its token from Office's single
 * sign-on; here this server stands in for it at `POST /token`, with a token of the local identity
 * provider that `npm start` runs, fetched the way `npm run token` fetches one. The browser never
 * talks to the identity provider, whose certificate it would not trust.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { appRootAbove } from '../shared/app-root.js';
import { SETTINGS } from '../shared/settings.js';
import { DEFAULT_API_PORT, LOCAL_HOME_TENANT_ID } from './defaults.js';
import { close, listen, sendJson } from './embedded-http.js';
import { API_USER_SCOPE, DEFAULT_LOCAL_USERNAME, localIdentityDataDir, readIdentityProviderInfo, type IdentityProviderInfo } from './identity-provider.js';
import { requestAccessToken } from './token.js';

const DEFAULT_SAMPLE_PORT = Number(SETTINGS.SAMPLE_PORT.default);
/** The signed-in user's role in the sample: enough to list and create projects. */
const SAMPLE_ROLE = 'LMS.Manager';
const NO_STORE = { 'Cache-Control': 'no-store' };

const SAMPLE_FILES: Record<string, { file: string; contentType: string }> = {
  '/': { file: 'index.html', contentType: 'text/html; charset=utf-8' },
  '/task-pane.js': { file: 'task-pane.js', contentType: 'text/javascript; charset=utf-8' },
};

export interface SampleServerOptions {
  port: number;
  host: string;
  /** The API the page calls, handed to it as its config.json. */
  apiBaseUrl: string;
  identityProvider: IdentityProviderInfo;
}

export async function startSampleServer(options: SampleServerOptions) {
  const sampleDir = join(appRootAbove(import.meta.url), 'samples', 'task-pane');

  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://sample').pathname;
    const sampleFile = SAMPLE_FILES[path];
    if (request.method === 'GET' && sampleFile) {
      response.writeHead(200, { 'Content-Type': sampleFile.contentType, 'Cache-Control': 'no-store' });
      response.end(await readFile(join(sampleDir, sampleFile.file)));
    } else if (request.method === 'GET' && path === '/config.json') {
      // What a deployed page's static config.json holds: where the API is. `tokenUrl` says there is no Office to ask.
      sendJson(response, 200, { apiBaseUrl: options.apiBaseUrl, tokenUrl: 'token' }, NO_STORE);
    } else if (request.method === 'POST' && path === '/token') {
      const accessToken = await requestAccessToken(options.identityProvider, {
        tenantId: LOCAL_HOME_TENANT_ID,
        kind: 'user',
        roles: [SAMPLE_ROLE],
        username: DEFAULT_LOCAL_USERNAME,
        scope: API_USER_SCOPE,
        version: 1,
      });
      sendJson(response, 200, { access_token: accessToken }, NO_STORE);
    } else {
      sendJson(response, 404, { message: `Nothing at ${request.method} ${path}` }, NO_STORE);
    }
  }

  const server = createServer((request, response) => {
    answer(request, response).catch((error: unknown) => sendJson(response, 502, { message: (error as Error).message }, NO_STORE));
  });
  const port = await listen(server, options.port, options.host, 'sample server');
  return { port, close: () => close(server) };
}

/** Whether the API's CORS setting lets a page of `origin` call it: the preflight a browser sends first. */
async function apiAllows(apiBaseUrl: string, origin: string): Promise<boolean> {
  const preflight = await fetch(`${apiBaseUrl}/projects`, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' },
  });
  return preflight.headers.get('access-control-allow-origin') !== null;
}

async function serveSample(): Promise<void> {
  const apiBaseUrl = `http://localhost:${process.env.PORT || DEFAULT_API_PORT}/api`;
  const identityProvider = await readIdentityProviderInfo(localIdentityDataDir(appRootAbove(import.meta.url)));
  const sample = await startSampleServer({ port: Number(process.env.SAMPLE_PORT || DEFAULT_SAMPLE_PORT), host: '127.0.0.1', apiBaseUrl, identityProvider });
  const origin = `http://localhost:${sample.port}`;
  console.log(`The task-pane sample is at ${origin}, calling the API at ${apiBaseUrl} as ${DEFAULT_LOCAL_USERNAME} (${SAMPLE_ROLE}).`);
  const allowed = await apiAllows(apiBaseUrl, origin).catch(() => undefined);
  if (allowed === undefined) console.warn(`The API does not answer at ${apiBaseUrl}: is \`npm start\` running?`);
  if (allowed === false) {
    console.warn(`The API does not let ${origin} call it: start it with CORS_ALLOWED_ORIGINS=${origin} npm start, or set Host.CORS in local.settings.json.`);
  }
  console.log('Press Ctrl+C to stop.');
  const stop = () => void sample.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  await serveSample().catch((error: unknown) => {
    console.error((error as Error).message);
    process.exit(1);
  });
}
