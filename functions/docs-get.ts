import { app } from '@azure/functions';
import { z } from 'zod';
import { canonicalPath, publicOperation, respond } from '../shared/http/endpoint.js';
import { apiRoute } from '../shared/http/routes.js';
import { PAGE_CONTENT_SECURITY_POLICY, referencePage } from '../shared/openapi/reference-page.js';

export const docsGet = publicOperation(
  {
    success: { status: 200, body: z.string(), mediaTypes: ['text/html'] },
    docs: {
      summary: 'API reference page',
      description: 'Swagger UI rendering this document, served by the API itself. No token needed to read it; to try operations, authorise with a token.',
    },
  },
  (request, context) =>
    respond(request, context, () =>
      Promise.resolve({
        status: 200,
        body: referencePage(canonicalPath(new URL(request.url))),
        headers: { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': PAGE_CONTENT_SECURITY_POLICY },
      }),
    ),
);

app.http('docs-get', { methods: ['GET'], route: apiRoute('docs'), authLevel: 'anonymous', handler: docsGet });
