/**
 * A proxy in front of the database: records every request that reaches Cosmos DB, can answer some
 * itself (a 429, say) or hold them while the test does something first, and keeps the SDK talking to it.
 */
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import { type AddressInfo } from 'node:net';
import { keepIdleConnectionsOpen } from '../../local/embedded-http.js';

export interface CosmosRequestRecord {
  method: string;
  path: string;
  /** The first 4 KB of the request body. */
  body: string;
  isQuery: boolean;
  /** A read of a container's change feed. */
  isChangeFeed: boolean;
  /** The partition key the request names (`x-ms-documentdb-partitionkey`, JSON), if any: where Azure runs a query. */
  partitionKey: string | undefined;
}

type InterceptAnswer = { status: number; headers?: Record<string, string>; body?: unknown } | undefined;

/** The store behind the proxy, the TLS pair the proxy answers with, and the certificate the store's is checked against (by default that pair's). */
export interface ProxiedStore {
  endpoint: string;
  key: string;
  tls: { cert: string; key: string };
  ca?: string;
}

export interface CosmosProxy {
  endpoint: string;
  /** What an app's COSMOS_CONNECTION holds to go through the proxy. */
  connectionString: string;
  /** Every request that reached the database through the proxy. */
  requests: CosmosRequestRecord[];
  /**
   * Decides the fate of each request: forward it (undefined), or answer it here (a 429, say). A
   * promise holds the request until it settles: what the test does meanwhile reaches the store first.
   */
  intercept: ((record: CosmosRequestRecord) => InterceptAnswer | Promise<InterceptAnswer>) | undefined;
  close(): Promise<void>;
}

/**
 * An HTTPS proxy in front of a Cosmos DB endpoint (by default the test stack's): it records every
 * request, can answer some itself, and rewrites the account's own address in the account document,
 * so that the SDK keeps talking to the proxy instead of discovering the real endpoint.
 */
export async function startCosmosProxy(store?: ProxiedStore): Promise<CosmosProxy> {
  const { endpoint: target, key, tls, ca = tls.cert } = store ?? (await stackStore());
  const targetUrl = new URL(target);
  const agent = new HttpsAgent({ ca, keepAlive: true });
  let endpoint = '';
  const proxy: CosmosProxy = {
    endpoint: '',
    connectionString: '',
    requests: [],
    intercept: undefined,
    close: () => Promise.resolve(),
  };
  const server = keepIdleConnectionsOpen(
    createHttpsServer({ cert: tls.cert, key: tls.key }, (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        const record: CosmosRequestRecord = {
          method: request.method ?? 'GET',
          path: decodeURIComponent(request.url ?? '/'),
          body: body.subarray(0, 4096).toString('utf8'),
          isQuery: String(request.headers['x-ms-documentdb-isquery']).toLowerCase() === 'true',
          isChangeFeed: /incremental feed/i.test(String(request.headers['a-im'])),
          partitionKey: [request.headers['x-ms-documentdb-partitionkey']].flat()[0],
        };
        proxy.requests.push(record);
        void Promise.resolve(proxy.intercept?.(record)).then((answer) => {
          if (!answer) return forward(request, body, response);
          const text = JSON.stringify(answer.body ?? { code: 'TooManyRequests', message: 'Request rate is large.' });
          response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(text);
        });
      });
    }),
  );

  function forward(request: IncomingMessage, body: Buffer, response: ServerResponse): void {
    const upstream = httpsRequest(
      {
        host: targetUrl.hostname,
        port: targetUrl.port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, host: targetUrl.host },
        agent,
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          let text = Buffer.concat(chunks);
          if (request.method === 'GET' && (request.url === '/' || request.url === '')) {
            text = Buffer.from(text.toString('utf8').split(target).join(endpoint));
          }
          const headers = { ...answer.headers, 'content-length': String(text.length) };
          delete headers['transfer-encoding'];
          response.writeHead(answer.statusCode ?? 502, headers).end(text);
        });
      },
    );
    upstream.on('error', () => response.destroy());
    upstream.end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  proxy.endpoint = endpoint;
  proxy.connectionString = `AccountEndpoint=${endpoint};AccountKey=${key};`;
  proxy.close = async () => {
    agent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return proxy;
}

/** The test stack's store. */
async function stackStore(): Promise<ProxiedStore> {
  const { stack } = await import('./stack.js');
  return { endpoint: stack.cosmosEndpoint, key: stack.cosmosKey, tls: stack.tls, ca: stack.caCertPem };
}

/** The store's answer when a test makes it fail a request. */
export const STORE_FAILURE = { status: 500, body: { code: 'InternalServerError', message: 'The store failed.' } };

/**
 * Holds the first request to the store that `matches` until `first` has run, so that what `first`
 * writes reaches the store before it; `first` may answer the request instead of letting it through.
 */
export function beforeRequest(proxy: CosmosProxy, matches: (record: CosmosRequestRecord) => boolean, first: () => Promise<InterceptAnswer | void>): void {
  proxy.intercept = (record) => {
    if (!matches(record)) return undefined;
    proxy.intercept = undefined;
    return first().then((answer) => answer ?? undefined);
  };
}

/** A transactional batch (its body a list of operations). */
export const isBatch = (record: CosmosRequestRecord): boolean => record.method === 'POST' && record.body.startsWith('[');

/** The requests that changed something (anything but reads and queries). */
export function writesIn(requests: CosmosRequestRecord[]): CosmosRequestRecord[] {
  return requests.filter((request) => request.method !== 'GET' && !request.isQuery && !request.path.endsWith('/pkranges'));
}
