import { readFile } from 'node:fs/promises';
import { app } from '@azure/functions';
import { respond } from '../shared/http/endpoint.js';
import { notModifiedOr } from '../shared/http/responses.js';
import { openApiDocument } from '../shared/openapi/components.js';
import { documentFile } from '../shared/openapi/document-file.js';
import { publicOperation } from '../shared/openapi/operation.js';

let document: Promise<unknown> | undefined;

/**
 * The document `npm run openapi` wrote from the registrations of every function file: in Azure a
 * function cannot see the others' registrations, so the document is built before deployment.
 */
function loadDocument(): Promise<unknown> {
  document ??= readFile(documentFile(), 'utf8').then((text) => JSON.parse(text) as unknown);
  document.catch(() => (document = undefined));
  return document;
}

export const openapiGet = publicOperation(
  {
    summary: 'This API description',
    description: 'The OpenAPI 3.1 document of the API. It holds no data, so it needs no token.',
    success: { status: 200, body: openApiDocument, headers: ['ETag'] },
    honours: ['If-None-Match'],
  },
  (request, context) => respond(request, context, async () => notModifiedOr(request, await loadDocument())),
);

app.http('openapi-get', { methods: ['GET'], route: 'openapi.json', authLevel: 'anonymous', handler: openapiGet });
