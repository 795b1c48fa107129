import { app } from '@azure/functions';
import { z } from 'zod';
import { respond } from '../shared/http/endpoint.js';
import { publicOperation } from '../shared/openapi/operation.js';
import { PAGE_CONTENT_SECURITY_POLICY, referencePage } from '../shared/openapi/reference-page.js';

export const docsGet = publicOperation(
  {
    summary: 'API reference page',
    description: 'Swagger UI rendering this document, served by the API itself. No token needed to read it; to try operations, authorise with a token.',
    success: { status: 200, body: z.string(), mediaTypes: ['text/html'] },
  },
  (request, context) =>
    respond(request, context, () =>
      Promise.resolve({
        status: 200,
        body: referencePage(new URL(request.url).pathname),
        headers: { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': PAGE_CONTENT_SECURITY_POLICY },
      }),
    ),
);

app.http('docs-get', { methods: ['GET'], route: 'docs', authLevel: 'anonymous', handler: docsGet });
