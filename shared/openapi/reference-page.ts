import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { lazily } from '../lib/lazy.js';
import type { PathParameter } from '../schemas/common.js';

/**
 * The API reference page: Swagger UI from the swagger-ui-dist package, whose files the API serves
 * itself (`GET /api/docs/{file}`), so the page loads nothing from a CDN. It renders the document the
 * API serves at `/api/openapi.json`.
 */

/** A file of the swagger-ui-dist package, found where Node would find the package. */
function swaggerUiFile(name: string): Promise<Buffer> {
  return readFile(join(dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')), name));
}

/** The page's own script: a file rather than inline, so that its Content-Security-Policy can forbid inline scripts. */
const START_SCRIPT = `'use strict';
const root = document.getElementById('swagger-ui');
window.ui = SwaggerUIBundle({
  url: root.dataset.documentUrl,
  domNode: root,
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

const JAVASCRIPT = 'text/javascript; charset=utf-8';

/** Every file the page loads, with its content type, read once per process. */
const PAGE_FILES = {
  'swagger-ui.css': { contentType: 'text/css; charset=utf-8', read: lazily(() => swaggerUiFile('swagger-ui.css')) },
  'swagger-ui-bundle.js': { contentType: JAVASCRIPT, read: lazily(() => swaggerUiFile('swagger-ui-bundle.js')) },
  'favicon-32x32.png': { contentType: 'image/png', read: lazily(() => swaggerUiFile('favicon-32x32.png')) },
  'start.js': { contentType: JAVASCRIPT, read: () => Promise.resolve(Buffer.from(START_SCRIPT)) },
};
type PageFileName = keyof typeof PAGE_FILES;

/** The `{file}` of `/api/docs/{file}`: any other name is no route of the API. */
export const pageFileParameter: PathParameter = {
  schema: z.enum(Object.keys(PAGE_FILES) as [PageFileName, ...PageFileName[]]),
  notFound: 'routeNotFound',
  example: 'swagger-ui.css',
};
/** The media types of the page's files, without parameters, as the document lists them. */
export const PAGE_FILE_TYPES = [...new Set(Object.values(PAGE_FILES).map((file) => file.contentType.split(';')[0]!))];

/** Swagger UI sets styles and data: images from script; nothing else is allowed, nothing from elsewhere. */
export const PAGE_CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src " +
  "'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** A page file: its bytes and content type. */
export async function pageFile(name: string): Promise<{ body: Buffer; contentType: string }> {
  const file = PAGE_FILES[name as PageFileName];
  return { body: await file.read(), contentType: file.contentType };
}

/**
 * The page for a request to `pagePath` (`/api/docs`, with or without a trailing slash): its files
 * live below it and the document beside it, so the links are absolute paths built from it.
 */
export function referencePage(pagePath: string): string {
  const page = pagePath.replace(/\/+$/, '');
  const documentUrl = `${page.slice(0, page.lastIndexOf('/'))}/openapi.json`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>LMS Platform API reference</title>
<link rel="stylesheet" href="${page}/swagger-ui.css">
<link rel="icon" type="image/png" href="${page}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui" data-document-url="${documentUrl}"></div>
<script src="${page}/swagger-ui-bundle.js"></script>
<script src="${page}/start.js"></script>
</body>
</html>
`;
}
