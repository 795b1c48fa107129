import { app } from '@azure/functions';
import { pathParameters, publicOperation, respond } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import type { OperationDefinition } from '../shared/http/operation-definition.js';
import { pageFile, PAGE_FILE_TYPES, pageFileParameter } from '../shared/openapi/reference-page.js';

// The files change only with the swagger-ui-dist version, so browsers may keep them for a day.
const CACHE_FOR_A_DAY = 'public, max-age=86400';

const definition = {
  params: { file: pageFileParameter },
  success: { status: 200, mediaTypes: PAGE_FILE_TYPES },
  docs: {
    summary: 'A file of the API reference page',
    description: 'The Swagger UI files the reference page loads, from the swagger-ui-dist package.',
  },
} satisfies OperationDefinition;

export const docsFilesGet = publicOperation(definition, (request, context) =>
  respond(request, context, async () => {
    const { file } = pathParameters(definition.params, request);
    const { body, contentType } = await pageFile(file);
    return { status: 200, body, headers: { 'Content-Type': contentType, 'Cache-Control': CACHE_FOR_A_DAY } };
  }),
);

app.http('docs-files-get', { methods: ['GET'], route: apiRoute('docs/{file}'), authLevel: 'anonymous', handler: docsFilesGet });
