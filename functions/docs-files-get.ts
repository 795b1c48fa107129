import { app } from '@azure/functions';
import { notFound } from '../shared/errors.js';
import { respond } from '../shared/http/endpoint.js';
import { publicOperation } from '../shared/openapi/operation.js';
import { PAGE_FILE_TYPES, pageFile } from '../shared/openapi/reference-page.js';

// The files change only with the swagger-ui-dist version, so browsers may keep them for a day.
const CACHE_FOR_A_DAY = 'public, max-age=86400';

export const docsFilesGet = publicOperation(
  {
    summary: 'A file of the API reference page',
    description: 'The Swagger UI files the reference page loads, from the swagger-ui-dist package.',
    success: { status: 200, mediaTypes: PAGE_FILE_TYPES },
    errors: { 404: ['routeNotFound'] },
  },
  (request, context) =>
    respond(request, context, async () => {
      const file = await pageFile(request.params.file ?? '');
      if (!file) throw notFound('routeNotFound', { method: request.method, path: new URL(request.url).pathname.slice(0, 200) });
      return { status: 200, body: file.body, headers: { 'Content-Type': file.contentType, 'Cache-Control': CACHE_FOR_A_DAY } };
    }),
);

app.http('docs-files-get', { methods: ['GET'], route: 'docs/{file}', authLevel: 'anonymous', handler: docsFilesGet });
