/**
 * What Azure's Node worker hands an HTTP function for a request: an `HttpRequest` around a fetch
 * `Request`, and an `InvocationContext`. The local host builds them for every request it serves; the
 * bench builds them the same way to time the app without HTTP around it.
 */
import { randomUUID } from 'node:crypto';
import functions, { type HttpRequest, type InvocationContext } from '@azure/functions';
import type { LogFunction } from './queue-triggers.js';

// The library's classes are not visible to ESM's named-import detection, so they come from the default export.
const { HttpRequest: HttpRequestClass, InvocationContext: InvocationContextClass } = functions;

export interface HttpInvocationInput {
  functionName: string;
  /** The function's HTTP trigger binding, as registered. */
  trigger: object;
  url: URL;
  method: string;
  headers: Headers;
  /** The request body, read whole or as it arrives; none for GET and HEAD. */
  body?: Uint8Array | ReadableStream;
  params: Record<string, string>;
  log: LogFunction;
}

export function httpInvocation(input: HttpInvocationInput): [HttpRequest, InvocationContext] {
  const { functionName, log } = input;
  const nativeRequest = new Request(input.url, {
    method: input.method,
    headers: input.headers,
    ...(input.body ? { body: input.body, duplex: 'half' } : {}),
  } as RequestInit);
  const context = new InvocationContextClass({
    invocationId: randomUUID(),
    functionName,
    options: { trigger: { ...input.trigger, name: 'request' } as never, extraInputs: [], extraOutputs: [] },
    logHandler: (level, ...args) => log(functionName, level, args.map(String).join(' ')),
  });
  return [new HttpRequestClass({ nativeRequest, params: input.params } as never), context];
}
