/** What Azure's Node worker hands an HTTP function: an `HttpRequest` built from the request's parts as the worker builds it, and an `InvocationContext`. */
import functions, { type HttpRequest, type InvocationContext } from '@azure/functions';
import { invocationContext, type LogFunction } from './registrations.js';

// The library's classes are not visible to ESM's named-import detection, so they come from the default export.
const { HttpRequest: HttpRequestClass } = functions;

export interface HttpInvocationInput {
  functionName: string;
  trigger: object;
  url: URL;
  method: string;
  /** The headers as received: a repeated header once for each of its values. */
  headers: Iterable<[string, string]>;
  /** The request body, read whole or as it arrives; none for GET and HEAD. */
  body?: Uint8Array | ReadableStream;
  params: Record<string, string>;
  log: LogFunction;
}

/**
 * Name/value pairs as Azure's host (ASP.NET Core) collects them: names compared without regard to
 * case, the first spelling kept, and a repeated name's values joined by "," with empty ones left out
 * (StringValues.ToString()), so `a=&a=x` is `x`.
 */
function joinedAsAzure(pairs: Iterable<[string, string]>): Record<string, string> {
  // No prototype: a parameter named __proto__ stays a parameter.
  const joined = Object.create(null) as Record<string, string>;
  const spellings = new Map<string, string>();
  for (const [name, value] of pairs) {
    const lowerCase = name.toLowerCase();
    if (!spellings.has(lowerCase)) spellings.set(lowerCase, name);
    const key = spellings.get(lowerCase)!;
    const before = joined[key];
    joined[key] = before && value ? `${before},${value}` : before || value;
  }
  return joined;
}

export function httpInvocation(input: HttpInvocationInput): [HttpRequest, InvocationContext] {
  const { url, method, body, params } = input;
  const headers = joinedAsAzure(input.headers);
  // The library builds `request.query` from this record, as from the worker's `nullableQuery`; the URL keeps the raw query string.
  const query = joinedAsAzure(url.searchParams);
  const request =
    body instanceof ReadableStream
      ? // A body still arriving: a fetch Request streaming it, as the library's HTTP stream mode builds.
        new HttpRequestClass({ nativeRequest: new Request(url, { method, headers, body, duplex: 'half' }), params, query } as never)
      : new HttpRequestClass({ url: url.href, method, headers, params, query, ...(body ? { body: { bytes: body } } : {}) });
  return [request, invocationContext(input.functionName, { ...input.trigger, name: 'request' }, input.log)];
}
