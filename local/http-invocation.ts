/**
 * What Azure's Node worker hands an HTTP function for a request: an `HttpRequest` around a fetch
 * `Request`, and an `InvocationContext`. The local host builds them for every request it serves; the
 * bench builds them the same way to time the app without HTTP around it.
 *
 * Like the worker, it gives the library the request's parts (URL, method, headers, body bytes) and
 * lets the library build the fetch `Request`, so the app meets the objects Azure builds, made the
 * way Azure makes them (the headers are checked once, as there). The query, too, is given as Azure's
 * host gives it, while the URL keeps the raw query string.
 */
import functions, { type HttpRequest, type InvocationContext } from '@azure/functions';
import { invocationContext, type LogFunction } from './registrations.js';

// The library's classes are not visible to ESM's named-import detection, so they come from the default export.
const { HttpRequest: HttpRequestClass } = functions;

export interface HttpInvocationInput {
  functionName: string;
  /** The function's HTTP trigger binding, as registered. */
  trigger: object;
  url: URL;
  method: string;
  /** Lower-case names; a repeated header's values joined by ",", as Azure's host passes them. */
  headers: Record<string, string>;
  /** The request body, read whole or as it arrives; none for GET and HEAD. */
  body?: Uint8Array | ReadableStream;
  params: Record<string, string>;
  log: LogFunction;
}

/**
 * Name/value pairs as Azure's host (ASP.NET Core) collects them before passing them to the worker:
 * names compared without regard to case, the first spelling kept, and a repeated name's values joined
 * by "," with empty ones left out (StringValues.ToString()), so `a=&a=x` is `x`.
 */
export function joinedAsAzure(pairs: Iterable<[string, string]>): Record<string, string> {
  const byName = new Map<string, { name: string; values: string[] }>();
  for (const [name, value] of pairs) {
    const key = name.toLowerCase();
    const entry = byName.get(key);
    if (entry) entry.values.push(value);
    else byName.set(key, { name, values: [value] });
  }
  // No prototype: a parameter named __proto__ stays a parameter.
  const joined = Object.create(null) as Record<string, string>;
  for (const { name, values } of byName.values()) joined[name] = values.filter(Boolean).join(',');
  return joined;
}

export function httpInvocation(input: HttpInvocationInput): [HttpRequest, InvocationContext] {
  const { functionName, method, headers, body, params, log } = input;
  // The library builds `request.query` from this record, as from the worker's `nullableQuery`.
  const query = joinedAsAzure(input.url.searchParams);
  const request =
    body instanceof ReadableStream
      ? // A body still arriving: a fetch Request streaming it, as the library's HTTP stream mode builds.
        new HttpRequestClass({ nativeRequest: new Request(input.url, { method, headers, body, duplex: 'half' }), params, query } as never)
      : new HttpRequestClass({ url: input.url.href, method, headers, params, query, ...(body ? { body: { bytes: body } } : {}) });
  return [request, invocationContext(functionName, { ...input.trigger, name: 'request' }, log)];
}
