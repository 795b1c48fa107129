import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

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

/** Every file the page loads, with its content type and where it comes from. */
const PAGE_FILES: Record<string, { contentType: string; read: () => Promise<Buffer> }> = {
  'swagger-ui.css': { contentType: 'text/css; charset=utf-8', read: () => swaggerUiFile('swagger-ui.css') },
  'swagger-ui-bundle.js': { contentType: JAVASCRIPT, read: () => swaggerUiFile('swagger-ui-bundle.js') },
  'favicon-32x32.png': { contentType: 'image/png', read: () => swaggerUiFile('favicon-32x32.png') },
  'start.js': { contentType: JAVASCRIPT, read: () => Promise.resolve(Buffer.from(START_SCRIPT)) },
};

export const PAGE_FILE_NAMES = Object.keys(PAGE_FILES);
/** The media types of the page's files, without parameters, as the document lists them. */
export const PAGE_FILE_TYPES = [...new Set(Object.values(PAGE_FILES).map((file) => file.contentType.split(';')[0]!))];

/** Swagger UI sets styles and data: images from script; nothing else is allowed, nothing from elsewhere. */
export const PAGE_CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src " +
  "'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const loaded = new Map<string, Promise<Buffer>>();

/** A page file, read once per process; undefined for a name the page does not use. */
export async function pageFile(name: string): Promise<{ body: Buffer; contentType: string } | undefined> {
  const file = Object.hasOwn(PAGE_FILES, name) ? PAGE_FILES[name] : undefined;
  if (!file) return undefined;
  let body = loaded.get(name);
  if (!body) {
    body = file.read();
    loaded.set(name, body);
    body.catch(() => loaded.delete(name));
  }
  return { body: await body, contentType: file.contentType };
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
