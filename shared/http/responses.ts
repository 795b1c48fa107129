import type { HttpResponseInit } from '@azure/functions';
import type { Language } from './language.js';

/** Headers on every response: nothing is cached by intermediaries, nothing is content-sniffed. */
export function responseHeaders(requestId: string, language?: Language): Record<string, string> {
  return {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Request-Id': requestId,
    ...(language ? { 'Content-Language': language } : {}),
  };
}

export function json(status: number, jsonBody: unknown, headers: Record<string, string> = {}): HttpResponseInit {
  return { status, jsonBody, headers };
}

export function noContent(headers: Record<string, string> = {}): HttpResponseInit {
  return { status: 204, headers };
}

/** RFC 8288 `Link` to the next page: the same request with the next cursor. */
export function nextPageLink(requestUrl: string, cursor: string | undefined): Record<string, string> {
  if (cursor === undefined) return {};
  const url = new URL(requestUrl);
  url.searchParams.set('cursor', cursor);
  return { Link: `<${url.href}>; rel="next"` };
}
