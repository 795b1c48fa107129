/** What the local host sends for a function's result: the status, headers and body bytes `HttpResponse` gives for it. */
import functions, { type HttpResponseInit } from '@azure/functions';

const { HttpResponse } = functions;

// Statuses whose answers have no body, as the fetch Response behind HttpResponse has it.
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/** What the fetch Headers class does to a value: HTTP whitespace around it removed. */
const trimHttpWhitespace = (value: string): string => value.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');

export interface Answer {
  status: number;
  headers: Record<string, string | string[]>;
  body?: Buffer;
}

/**
 * The answer to a plain init with a JSON body or none, the app's every answer, without building a
 * fetch Response around it: the same status, headers and bytes as HttpResponse gives (names in lower
 * case, a repeated name joined with ", ", `application/json` unless the init names a content type).
 * Anything else (a body, cookies, a Headers object) is left to HttpResponse.
 */
export function plainAnswer(init: HttpResponseInit): Answer | undefined {
  if (init.body !== undefined || init.cookies?.length || init.headers instanceof Headers || Array.isArray(init.headers)) return undefined;
  const status = init.status ?? 200;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(init.headers ?? {})) {
    const key = name.toLowerCase();
    // The fetch Headers class loses a header of this name; so does HttpResponse.
    if (key === '__proto__') continue;
    const normalized = trimHttpWhitespace(String(value));
    headers[key] = Object.hasOwn(headers, key) ? `${headers[key]}, ${normalized}` : normalized;
  }
  if (init.jsonBody === undefined || init.jsonBody === null || NULL_BODY_STATUSES.has(status)) return { status, headers };
  // For a JSON body, HttpResponse copies the headers once more, which trims each joined value again.
  for (const key of Object.keys(headers)) headers[key] = trimHttpWhitespace(headers[key]!);
  headers['content-type'] ??= 'application/json';
  return { status, headers, body: Buffer.from(JSON.stringify(init.jsonBody)) };
}

export async function answerOf(response: InstanceType<typeof HttpResponse>): Promise<Answer> {
  const headers: Record<string, string | string[]> = Object.fromEntries(response.headers);
  const cookies = response.cookies.map((cookie) => `${cookie.name}=${cookie.value}`);
  if (cookies.length) headers['set-cookie'] = cookies;
  const body = response.body && !NULL_BODY_STATUSES.has(response.status) ? Buffer.from(await response.arrayBuffer()) : undefined;
  return { status: response.status, headers, ...(body ? { body } : {}) };
}

/** The answer to whatever a function returned: an HttpResponse, a plain init, or nothing. */
export async function answerTo(result: unknown): Promise<Answer> {
  if (result instanceof HttpResponse) return answerOf(result);
  const init = (result ?? {}) as HttpResponseInit;
  return plainAnswer(init) ?? answerOf(new HttpResponse(init));
}
