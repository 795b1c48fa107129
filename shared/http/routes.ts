/**
 * Where the API's operations live, and what the app answers where none does. host.json's routePrefix is
 * empty, so that every path reaches the app, as it would not below a prefix: each operation's route is
 * below API_BASE_PATH (apiRoute), and the catch-all function (functions/routes-fallback.ts) answers
 * whatever no operation takes, by the operations of the document the app carries.
 */
import { ApiError } from '../errors.js';
import { lazily } from '../lib/lazy.js';
import { servedDocument } from './served-document.js';

/** The path every operation of this version of the API lives under. */
export const API_BASE_PATH = 'api';

/** An operation's route, as `app.http` registers it: `apiRoute('projects/{projectId}')`. */
export function apiRoute(route: string): string {
  return `${API_BASE_PATH}/${route}`;
}

interface DocumentedPath {
  /** The template's segments: a literal in lower case, or null for a parameter. */
  segments: (string | null)[];
  methods: string[];
}

/** A path's segments as routing compares them: without empty ones, percent-decoded where they decode, without regard to case. */
function segmentsOf(path: string): string[] {
  return path
    .split('/')
    .filter(Boolean)
    .map((segment) => {
      try {
        return decodeURIComponent(segment).toLowerCase();
      } catch {
        return segment.toLowerCase();
      }
    });
}

/** The API's base path and its paths with their methods, from the document written from the registrations. */
const documented = lazily(async () => {
  const document = (await servedDocument()) as { servers: { url: string }[]; paths: Record<string, Record<string, unknown>> };
  const paths: DocumentedPath[] = Object.entries(document.paths).map(([template, item]) => ({
    segments: segmentsOf(template).map((segment) => (/^\{\w+\}$/.test(segment) ? null : segment)),
    methods: Object.keys(item).map((method) => method.toUpperCase()),
  }));
  return { base: segmentsOf(document.servers[0]!.url), paths };
});

/**
 * The failure for a request no operation takes: a path of the API asked with another method is a 405
 * whose `Allow` names the methods it takes (RFC 9110 15.5.6); a path outside the API's base path is a
 * 404 saying where the API is (a base URL without `/api`); anything else the 404 of no operation.
 */
export async function unmatchedRoute(method: string, url: URL): Promise<ApiError> {
  const { base, paths } = await documented();
  const path = url.pathname.slice(0, 200);
  const segments = segmentsOf(url.pathname);
  if (!base.every((segment, index) => segments[index] === segment)) {
    return new ApiError(404, 'outsideApi', { method, path, base: `/${base.join('/')}` });
  }
  const below = segments.slice(base.length);
  const allowed = paths
    .filter(
      (documentedPath) =>
        documentedPath.segments.length === below.length && documentedPath.segments.every((segment, index) => segment === null || segment === below[index]),
    )
    .flatMap((documentedPath) => documentedPath.methods);
  if (allowed.length > 0) {
    const methods = allowed.join(', ');
    return new ApiError(405, 'methodNotAllowed', { method, path, allowed: methods }, { headers: { Allow: methods } });
  }
  return new ApiError(404, 'routeNotFound', { method, path });
}
