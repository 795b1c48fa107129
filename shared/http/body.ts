import type { HttpRequest } from '@azure/functions';
import { ApiError, badRequest } from '../errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;

function tooLarge(): ApiError {
  return new ApiError(413, 'bodyTooLarge', { limit: MAX_BODY_BYTES });
}

function isJsonMediaType(contentType: string | null): boolean {
  if (!contentType) return false;
  const [mediaType, ...parameters] = contentType
    .toLowerCase()
    .split(';')
    .map((part) => part.trim());
  if (mediaType !== 'application/json') return false;
  const charset = parameters.find((parameter) => parameter.startsWith('charset='));
  return !charset || charset.slice('charset='.length).replace(/"/g, '') === 'utf-8';
}

/** Reads at most `limit` bytes, stopping as soon as the body proves larger: a huge body is never buffered whole. */
async function readLimited(request: HttpRequest, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw tooLarge();
  const stream = request.body;
  if (!stream) return new Uint8Array();
  const reader = (stream as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read().catch(() => {
      // The client went away before sending all it announced: its mistake, and nothing to log as ours.
      throw badRequest('bodyIncomplete');
    });
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Released, not cancelled: cancelling would drop the connection before the 413 is sent.
      reader.releaseLock();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** A request that announces no content: `Content-Length: 0`, or neither it nor `Transfer-Encoding`. */
function announcesNoContent(request: HttpRequest): boolean {
  const length = request.headers.get('content-length');
  return length === null ? !request.headers.has('transfer-encoding') : length.trim() === '0';
}

/**
 * The request body as a JSON object, or the contract's 415, 413 or 400, or a 411 for a chunked body.
 * With `mayBeOmitted` (an operation whose body has no required field), a request without content is
 * read as `{}`, whatever its Content-Type: there is nothing to type.
 */
export async function readJsonObject(request: HttpRequest, options: { mayBeOmitted?: boolean } = {}): Promise<Record<string, unknown>> {
  const json = isJsonMediaType(request.headers.get('content-type'));
  // Without a JSON type, only a body announced as empty is read: it must be empty, else a 415.
  if (!json && !(options.mayBeOmitted && announcesNoContent(request))) throw new ApiError(415, 'unsupportedMediaType');
  const bytes = await readLimited(request, MAX_BODY_BYTES);
  // Azure's host hands a body sent with Transfer-Encoding (no Content-Length) to the function empty:
  // the client is told to send Content-Length, rather than that its JSON is invalid or left out.
  if (bytes.byteLength === 0 && request.headers.has('transfer-encoding')) throw new ApiError(411, 'lengthRequired');
  if (bytes.byteLength === 0 && options.mayBeOmitted) return {};
  if (!json) throw new ApiError(415, 'unsupportedMediaType');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw badRequest('invalidUtf8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Also reached when nesting is deep enough to exhaust the parser's stack.
    throw badRequest('invalidJson');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest('bodyNotObject');
  return value as Record<string, unknown>;
}
