import type { HttpResponseInit } from '@azure/functions';
import type { HttpRequest } from '@azure/functions';
import { entityTag, isNotModified } from './etag.js';
import type { Language } from './language.js';

/**
 * The response headers a browser page of another origin may read (add-ins). Azure's CORS setting
 * allows origins but cannot expose headers, so the app names them itself; they stay unreadable to any
 * origin the host's CORS setting does not allow, which gets no `Access-Control-Allow-Origin`.
 */
const BROWSER_READABLE_HEADERS = [
  'ETag',
  'Location',
  'Link',
  'Retry-After',
  'Idempotent-Replayed',
  'X-Request-Id',
  'WWW-Authenticate',
  'Deprecation',
  'Sunset',
].join(', ');

/**
 * Headers on every response: nothing is cached by intermediaries, nothing is content-sniffed, pages
 * the host lets call may read the API's headers. `Content-Type` only where a body follows: a 204 or
 * a 304 has no content to type.
 */
export function responseHeaders(requestId: string, options: { language?: Language; body: boolean }): Record<string, string> {
  const headers: Record<string, string> = {
    ...(options.body ? { 'Content-Type': 'application/json; charset=utf-8' } : {}),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Request-Id': requestId,
    'Access-Control-Expose-Headers': BROWSER_READABLE_HEADERS,
  };
  if (options.language) headers['Content-Language'] = options.language;
  return headers;
}

/**
 * RFC 8288 `Link` to the next page: the same request with the next cursor, as a reference to the path
 * from the root (RFC 3986 4.2), which a client resolves against the URL it asked. Never an absolute URL:
 * the request's host is what the caller, or anything on the way, wrote in `Host`, and a client sends
 * its token where the link points.
 */
export function nextPageLink(requestUrl: URL, path: string, cursor: string | undefined): Record<string, string> {
  if (cursor === undefined) return {};
  const query = new URLSearchParams(requestUrl.search);
  query.set('cursor', cursor);
  return { Link: `<${path}?${query.toString()}>; rel="next"` };
}

/** A read: 304 when the client's If-None-Match names the current version, else 200 with the resource and its ETag. */
export function notModifiedOr(request: HttpRequest, representation: unknown): HttpResponseInit {
  const tag = entityTag(representation);
  if (isNotModified(request.headers.get('if-none-match'), tag)) return { status: 304, headers: { ETag: tag } };
  return { status: 200, jsonBody: representation, headers: { ETag: tag } };
}
