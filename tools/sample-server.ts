/**
 * `npm run sample`: serves the task-pane sample (samples/task-pane) on its own origin, so that the page calls
 * the API as an add-in does, through CORS. At `POST /token` it stands in for Office's single sign-on with a
 * token of the local identity provider, fetched as `npm run token` does, so the browser never has to trust the
 * provider's certificate.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { appRootAbove } from '../shared/lib/app-root.js';
import { SETTINGS } from '../shared/settings/catalog.js';
import { DEFAULT_API_PORT } from '../local/defaults.js';
import { close, listen, sendJson } from '../local/embedded-http.js';
import { localIdentityDataDir, readIdentityProviderInfo, type IdentityProviderInfo } from '../local/identity/provider.js';
import { DEFAULT_TOKEN_REQUEST, requestAccessToken } from './token.js';

/** The signed-in user's role in the sample: enough to list and create projects. */
const SAMPLE_ROLE = 'LMS.Manager';
const NO_STORE = { 'Cache-Control': 'no-store' };
const SAMPLE_FILES: Record<string, { file: string; contentType: string }> = {
  '/': { file: 'index.html', contentType: 'text/html; charset=utf-8' },
  '/task-pane.js': { file: 'task-pane.js', contentType: 'text/javascript; charset=utf-8' },
};

export async function startSampleServer(options: { port: number; host: string; apiBaseUrl: string; identityProvider: IdentityProviderInfo }) {
  const sampleDir = join(appRootAbove(import.meta.url), 'samples', 'task-pane');

  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://sample').pathname;
    const sampleFile = SAMPLE_FILES[path];
    if (request.method === 'GET' && sampleFile) {
      response.writeHead(200, { 'Content-Type': sampleFile.contentType, ...NO_STORE });
      response.end(await readFile(join(sampleDir, sampleFile.file)));
    } else if (request.method === 'GET' && path === '/config.json') {
      // What a deployed page's static config.json holds: where the API is. `tokenUrl` says there is no Office to ask.
      sendJson(response, 200, { apiBaseUrl: options.apiBaseUrl, tokenUrl: 'token' }, NO_STORE);
    } else if (request.method === 'POST' && path === '/token') {
      const accessToken = await requestAccessToken(options.identityProvider, { ...DEFAULT_TOKEN_REQUEST, roles: [SAMPLE_ROLE] });
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

async function serveSample(): Promise<void> {
  const apiBaseUrl = `http://localhost:${process.env.PORT || DEFAULT_API_PORT}/api`;
  const identityProvider = await readIdentityProviderInfo(localIdentityDataDir(appRootAbove(import.meta.url)));
  const port = Number(process.env.SAMPLE_PORT || SETTINGS.SAMPLE_PORT.default);
  const sample = await startSampleServer({ port, host: '127.0.0.1', apiBaseUrl, identityProvider });
  const origin = `http://localhost:${sample.port}`;
  console.log(`The task-pane sample is at ${origin}, calling the API at ${apiBaseUrl} as ${DEFAULT_TOKEN_REQUEST.username} (${SAMPLE_ROLE}).`);
  // The preflight a browser sends first says whether the API's CORS setting lets the page call it.
  const preflight = await fetch(`${apiBaseUrl}/projects`, {
    method: 'OPTIONS',
    headers: { Origin: origin, 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' },
  }).catch(() => undefined);
  if (!preflight) console.warn(`The API does not answer at ${apiBaseUrl}: is \`npm start\` running?`);
  else if (!preflight.headers.has('access-control-allow-origin')) {
    console.warn(`The API does not let ${origin} call it: start it with CORS_ALLOWED_ORIGINS=${origin} npm start, or set Host.CORS in local.settings.json.`);
  }
  console.log('Press Ctrl+C to stop.');
  const stop = () => void sample.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await serveSample().catch((error: unknown) => {
    console.error((error as Error).message);
    process.exit(1);
  });
}
