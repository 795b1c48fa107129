/**
 * The floor's work for each benchmarked request, and nothing more: verify the token with jose, make
 * one Cosmos call, give the document to write as JSON. bench/floor-server.ts serves it over HTTP,
 * bench/floor-function.ts as a function of the local host, and bench/in-process.ts calls it
 * directly. Settings come from the environment, as the app's do.
 */
import { randomUUID } from 'node:crypto';
import { CosmosClient } from '@azure/cosmos';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const {
  AUTH_TENANT_ID: tenantId = '',
  AUTH_CLIENT_ID: clientId = '',
  AUTH_AUTHORITY_HOST: authorityHost = '',
  COSMOS_CONNECTION: connectionString = '',
  COSMOS_DATABASE: database = '',
} = process.env;
const keys = createRemoteJWKSet(new URL(`${authorityHost}/${tenantId}/discovery/v2.0/keys`));
const documents = new CosmosClient({ connectionString }).database(database).container('tenant-data');

async function verify(authorization: string | undefined): Promise<string> {
  const { payload } = await jwtVerify(authorization?.slice('Bearer '.length) ?? '', keys, {
    algorithms: ['RS256'],
    issuer: `https://sts.windows.net/${tenantId}/`,
    audience: `api://${clientId}`,
  });
  return payload.tid as string;
}

export interface FloorRequest {
  method: string;
  url: URL;
  authorization: string | undefined;
  /** Reads the request body, for a POST. */
  text(): Promise<string>;
}

/** The status, and the document to answer with as JSON. */
export async function floorWork(request: FloorRequest): Promise<{ status: number; document: unknown }> {
  try {
    const tenant = await verify(request.authorization);
    const { method, url } = request;
    let status = 200;
    let body: unknown;
    if (method === 'GET' && url.pathname.startsWith('/api/projects/')) {
      ({ resource: body } = await documents.item(url.pathname.slice('/api/projects/'.length), tenant).read());
    } else if (method === 'GET' && url.pathname === '/api/projects') {
      const query = {
        query: "SELECT * FROM c WHERE c.tenantId = @t AND c.type = 'project' ORDER BY c.createdAt DESC",
        parameters: [{ name: '@t', value: tenant }],
      };
      ({ resources: body } = await documents.items.query(query, { partitionKey: tenant, maxItemCount: 50 }).fetchNext());
    } else if (method === 'GET' && url.pathname === '/api/tasks') {
      const query = {
        query: "SELECT * FROM c WHERE c.tenantId = @t AND c.type = 'task' AND c.projectId = @p ORDER BY c.createdAt DESC",
        parameters: [
          { name: '@t', value: tenant },
          { name: '@p', value: url.searchParams.get('projectId') },
        ],
      };
      ({ resources: body } = await documents.items.query(query, { partitionKey: tenant, maxItemCount: 50 }).fetchNext());
    } else if (method === 'POST' && url.pathname === '/api/projects') {
      const now = new Date().toISOString();
      ({ resource: body } = await documents.items.create({
        ...(JSON.parse(await request.text()) as Record<string, unknown>),
        id: `FLOOR-${randomUUID()}`,
        tenantId: tenant,
        type: 'floor',
        createdAt: now,
      }));
      status = 201;
    } else {
      status = 404;
    }
    return { status, document: body ?? null };
  } catch {
    return { status: 401, document: { error: 'Unauthorized' } };
  }
}
