import { app } from '@azure/functions';
import { publicOperation, respond } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { notModifiedOr } from '../shared/http/responses.js';
import { openApiDocument } from '../shared/openapi/components.js';
import { servedDocument } from '../shared/http/served-document.js';

export const openapiGet = publicOperation(
  {
    success: { status: 200, body: openApiDocument, headers: ['ETag'] },
    honours: ['If-None-Match'],
    docs: { summary: 'This API description', description: 'The OpenAPI 3.1 document of the API. It holds no data, so it needs no token.' },
  },
  (request, context) => respond(request, context, async () => notModifiedOr(request, await servedDocument())),
);

app.http('openapi-get', { methods: ['GET'], route: apiRoute('openapi.json'), authLevel: 'anonymous', handler: openapiGet });
