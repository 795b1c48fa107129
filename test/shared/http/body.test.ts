/** readJsonObject, called with HttpRequests built by @azure/functions' own constructor, as the worker builds them. */
import functions from '@azure/functions';
import { describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, readJsonObject } from '../../../shared/http/body.js';

const { HttpRequest } = functions;

type Body = string | Uint8Array | ReadableStream<Uint8Array> | undefined;

function request(body: Body, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  return new HttpRequest({
    nativeRequest: new Request('http://localhost/api/items', {
      method: 'POST',
      headers,
      ...(body === undefined ? {} : { body, duplex: 'half' }),
    }),
    params: {},
  } as never);
}

/** A body that arrives in the chunks given, then ends (or breaks, like a client that went away). */
function streamOf(chunks: Uint8Array[], end: 'close' | 'break' = 'close'): ReadableStream<Uint8Array> {
  let index = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (index < chunks.length) controller.enqueue(chunks[index++]!);
      else if (end === 'close') controller.close();
      else controller.error(new Error('client went away'));
    },
  });
}

const refusal = (status: number, messageKey: string, params?: Record<string, unknown>) =>
  expect.objectContaining({ status, messageKey, ...(params ? { params } : {}) });

describe('a JSON body', () => {
  it('is read as an object', async () => {
    expect(await readJsonObject(request('{"name":"Ada","tags":["a"]}'))).toEqual({ name: 'Ada', tags: ['a'] });
  });

  it.each([
    'application/json',
    'Application/JSON',
    ' application/json ; charset=UTF-8',
    'application/json;charset="utf-8"',
    'application/json; foo=bar',
    'application/json; foo=bar; charset=utf-8',
  ])('typed %j is read: application/json in any case, with parameters, and utf-8 its only charset', async (type) => {
    expect(await readJsonObject(request('{"a":1}', { 'content-type': type }))).toEqual({ a: 1 });
  });

  it.each(['text/plain', 'application/json-patch+json', 'application/jsonx', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'json'])(
    'typed %j, another type or charset, is a 415',
    async (type) => {
      await expect(readJsonObject(request('{"a":1}', { 'content-type': type }))).rejects.toEqual(refusal(415, 'unsupportedMediaType'));
    },
  );

  it('untyped is a 415, as text, as bytes, and where the body may be left out', async () => {
    await expect(readJsonObject(request('{"a":1}', {}))).rejects.toEqual(refusal(415, 'unsupportedMediaType'));
    // Sent as bytes, a body gets no Content-Type from the client library: untyped.
    await expect(readJsonObject(request(new TextEncoder().encode('{"a":1}'), {}))).rejects.toEqual(refusal(415, 'unsupportedMediaType'));
    await expect(readJsonObject(request('{"a":1}', {}), { mayBeOmitted: true })).rejects.toEqual(refusal(415, 'unsupportedMediaType'));
  });

  it('up to the limit is read, one byte more is a 413 naming the limit', async () => {
    const exactly = `{"a":"${'x'.repeat(MAX_BODY_BYTES - 8)}"}`;
    expect(Buffer.byteLength(exactly)).toBe(MAX_BODY_BYTES);
    expect(MAX_BODY_BYTES).toBe(1024 * 1024);
    expect(await readJsonObject(request(exactly))).toEqual({ a: 'x'.repeat(MAX_BODY_BYTES - 8) });
    const over = `{"a":"${'x'.repeat(MAX_BODY_BYTES - 7)}"}`;
    await expect(readJsonObject(request(over))).rejects.toEqual(refusal(413, 'bodyTooLarge', { limit: MAX_BODY_BYTES }));
  });

  it('announced larger than the limit is a 413, whatever arrives', async () => {
    const headers = { 'content-type': 'application/json', 'content-length': String(MAX_BODY_BYTES + 1) };
    await expect(readJsonObject(request(streamOf([new TextEncoder().encode('{}')]), headers))).rejects.toEqual(refusal(413, 'bodyTooLarge'));
    // Announced at the limit exactly, it is read.
    const atLimit = { 'content-type': 'application/json', 'content-length': String(MAX_BODY_BYTES) };
    expect(await readJsonObject(request(streamOf([new TextEncoder().encode('{}')]), atLimit))).toEqual({});
  });

  it('that streams past the limit is a 413 without reading the rest', async () => {
    const chunk = new Uint8Array(256 * 1024).fill(0x20);
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(chunk);
      },
    });
    await expect(readJsonObject(request(endless, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }))).rejects.toEqual(
      refusal(413, 'bodyTooLarge'),
    );
    expect(pulled).toBeLessThanOrEqual(6);
  });

  it('sent in chunks is put together', async () => {
    const encoder = new TextEncoder();
    const stream = streamOf([encoder.encode('{"na'), encoder.encode('me":"A'), encoder.encode('da"}')]);
    expect(await readJsonObject(request(stream, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }))).toEqual({ name: 'Ada' });
  });

  it('cut off by the client is a 400, not a failure of ours', async () => {
    const stream = streamOf([new TextEncoder().encode('{"name":')], 'break');
    await expect(readJsonObject(request(stream, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }))).rejects.toEqual(
      refusal(400, 'bodyIncomplete'),
    );
  });

  it('must be UTF-8: a byte that is not is a 400, even inside a string; a BOM is allowed', async () => {
    const invalid = Uint8Array.from([...Buffer.from('{"a":"'), 0xff, ...Buffer.from('"}')]);
    await expect(readJsonObject(request(invalid))).rejects.toEqual(refusal(400, 'invalidUtf8'));
    const withBom = Uint8Array.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"a":1}')]);
    expect(await readJsonObject(request(withBom))).toEqual({ a: 1 });
  });

  it('must be JSON, and a JSON object', async () => {
    await expect(readJsonObject(request('{"a":'))).rejects.toEqual(refusal(400, 'invalidJson'));
    for (const value of ['[]', '[{"a":1}]', 'null', '1', '"text"', 'true']) {
      await expect(readJsonObject(request(value))).rejects.toEqual(refusal(400, 'bodyNotObject'));
    }
  });

  it('left out is invalid JSON where the body is required', async () => {
    await expect(readJsonObject(request(undefined))).rejects.toEqual(refusal(400, 'invalidJson'));
    await expect(readJsonObject(request(''))).rejects.toEqual(refusal(400, 'invalidJson'));
  });
});

describe('a body that may be left out', () => {
  const omitted = { mayBeOmitted: true };

  it('is {} when none is sent, whatever the Content-Type says', async () => {
    expect(await readJsonObject(request(undefined, {}), omitted)).toEqual({});
    expect(await readJsonObject(request(undefined, { 'content-type': 'text/plain' }), omitted)).toEqual({});
    expect(await readJsonObject(request('', { 'content-type': 'text/plain', 'content-length': '0' }), omitted)).toEqual({});
    expect(await readJsonObject(request(undefined), omitted)).toEqual({});
  });

  it('announced empty by Content-Length next to Transfer-Encoding is the 411, whatever its type', async () => {
    const headers = { 'content-type': 'text/plain', 'content-length': '0', 'transfer-encoding': 'chunked' };
    await expect(readJsonObject(request(undefined, headers), omitted)).rejects.toEqual(refusal(411, 'lengthRequired'));
  });

  it('is read when sent as JSON', async () => {
    expect(await readJsonObject(request('{"a":1}'), omitted)).toEqual({ a: 1 });
  });

  it('is a 415 when content comes without a JSON type', async () => {
    await expect(readJsonObject(request('{"a":1}', { 'content-type': 'text/plain' }), omitted)).rejects.toEqual(refusal(415, 'unsupportedMediaType'));
    await expect(readJsonObject(request(streamOf([]), { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' }), omitted)).rejects.toEqual(
      refusal(415, 'unsupportedMediaType'),
    );
  });
});

describe('a body sent with Transfer-Encoding that arrives empty', () => {
  it('is a 411 asking for Content-Length, even where the body may be left out', async () => {
    const chunked = { 'content-type': 'application/json', 'transfer-encoding': 'chunked' };
    await expect(readJsonObject(request(streamOf([]), chunked))).rejects.toEqual(refusal(411, 'lengthRequired'));
    await expect(readJsonObject(request(streamOf([]), chunked), { mayBeOmitted: true })).rejects.toEqual(refusal(411, 'lengthRequired'));
  });
});
