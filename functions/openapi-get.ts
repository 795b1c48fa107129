import { readFile } from 'node:fs/promises';
import { app } from '@azure/functions';
import { publicOperation, respond } from '../shared/http/endpoint.js';
import { notModifiedOr } from '../shared/http/responses.js';
import { lazily } from '../shared/lazy.js';
import { openApiDocument } from '../shared/openapi/components.js';
import { documentFile } from '../shared/openapi/document-file.js';

/**
 * The document `npm run openapi` wrote from the registrations of every function file: in Azure a
 * function cannot see the others' registrations, so the document is built before deployment.
 */
const loadDocument = lazily(async () => JSON.parse(await readFile(documentFile(), 'utf8')) as unknown);

export const openapiGet = publicOperation(
  {
    success: { status: 200, body: openApiDocument, headers: ['ETag'] },
    honours: ['If-None-Match'],
    docs: { summary: 'This API description', description: 'The OpenAPI 3.1 document of the API. It holds no data, so it needs no token.' },
  },
  (request, context) => respond(request, context, async () => notModifiedOr(request, await loadDocument())),
);

app.http('openapi-get', { methods: ['GET'], route: 'openapi.json', authLevel: 'anonymous', handler: openapiGet });
