/**
 * The floor: a bare node:http server doing only the unavoidable work of each benchmarked request
 * (verify the token with jose, one Cosmos call, write the JSON), to measure the API against.
 * Run as a child process with the same settings and certificate trust as the local host.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { CosmosClient } from '@azure/cosmos';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const { AUTH_TENANT_ID: tenantId = '', AUTH_CLIENT_ID: clientId = '', AUTH_AUTHORITY_HOST: authorityHost = '', COSMOS_ENDPOINT: endpoint = '', COSMOS_KEY: key = '' } = process.env;
const keys = createRemoteJWKSet(new URL(`${authorityHost}/${tenantId}/discovery/v2.0/keys`));
const documents = new CosmosClient({ endpoint, key }).database('lms').container('tenant-data');

async function verify(authorization: string | undefined): Promise<string> {
  const { payload } = await jwtVerify(authorization?.slice('Bearer '.length) ?? '', keys, {
    algorithms: ['RS256'],
    issuer: `https://sts.windows.net/${tenantId}/`,
    audience: `api://${clientId}`,
  });
  return payload.tid as string;
}

const server = createServer(async (request, response) => {
  try {
    const tenant = await verify(request.headers.authorization);
    const url = new URL(request.url ?? '/', 'http://floor');
    let status = 200;
    let body: unknown;
    if (request.method === 'GET' && url.pathname.startsWith('/api/projects/')) {
      ({ resource: body } = await documents.item(url.pathname.slice('/api/projects/'.length), tenant).read());
    } else if (request.method === 'GET' && url.pathname === '/api/projects') {
      const query = { query: "SELECT * FROM c WHERE c.tenantId = @t AND c.type = 'project' ORDER BY c.createdAt DESC", parameters: [{ name: '@t', value: tenant }] };
      ({ resources: body } = await documents.items.query(query, { partitionKey: tenant, maxItemCount: 50 }).fetchNext());
    } else if (request.method === 'GET' && url.pathname === '/api/tasks') {
      const query = { query: "SELECT * FROM c WHERE c.tenantId = @t AND c.type = 'task' AND c.projectId = @p ORDER BY c.createdAt DESC", parameters: [{ name: '@t', value: tenant }, { name: '@p', value: url.searchParams.get('projectId') }] };
      ({ resources: body } = await documents.items.query(query, { partitionKey: tenant, maxItemCount: 50 }).fetchNext());
    } else if (request.method === 'POST' && url.pathname === '/api/projects') {
      let text = '';
      for await (const chunk of request) text += chunk;
      const now = new Date().toISOString();
      ({ resource: body } = await documents.items.create({ ...JSON.parse(text), id: `FLOOR-${randomUUID()}`, tenantId: tenant, type: 'floor', createdAt: now }));
      status = 201;
    } else {
      status = 404;
    }
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body ?? null));
  } catch {
    response.writeHead(401, { 'content-type': 'application/json; charset=utf-8' }).end('{"error":"Unauthorized"}');
  }
});

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });
});
process.on('disconnect', () => process.exit(0));
