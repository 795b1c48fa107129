import functions, { type HttpResponseInit } from '@azure/functions';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { answerOf, plainAnswer, type Answer } from '../../../local/host/http-answers.js';

const { HttpResponse } = functions;

/** An answer as it goes on the wire: header names compared in order-free form, the body as text. */
const wire = (answer: Answer) => ({ status: answer.status, headers: { ...answer.headers }, body: answer.body?.toString('utf8') });

async function expectSameAsHttpResponse(init: HttpResponseInit): Promise<void> {
  const fast = plainAnswer(init);
  expect(fast, 'a plain JSON init takes the direct path').toBeDefined();
  expect(wire(fast!)).toEqual(wire(await answerOf(new HttpResponse(init))));
}

const headerName = fc.constantFrom(
  'ETag',
  'etag',
  'Location',
  'Retry-After',
  'Content-Type',
  'X-Request-Id',
  'Cache-Control',
  'constructor',
  'toString',
  '__proto__',
);
const headerValue = fc.stringMatching(/^[\t ]{0,2}[!-~]{0,20}[\t ]{0,2}$/);

describe('the local host answers', () => {
  it('exactly as HttpResponse does for the app answers', async () => {
    await expectSameAsHttpResponse({
      status: 200,
      jsonBody: { id: 'PRJ-1001', name: 'Kurs', tags: [] },
      headers: { ETag: '"abc"', 'Cache-Control': 'no-store' },
    });
    await expectSameAsHttpResponse({
      status: 201,
      jsonBody: { id: 'TSK-1' },
      headers: { Location: '/api/tasks/TSK-1', 'Content-Type': 'application/json; charset=utf-8' },
    });
    await expectSameAsHttpResponse({ status: 204, headers: { 'X-Request-Id': 'r' } });
    await expectSameAsHttpResponse({ status: 304, jsonBody: { ignored: true }, headers: { ETag: '"abc"' } });
    await expectSameAsHttpResponse({ status: 503, jsonBody: { error: 'Service Unavailable', message: 'データベース' }, headers: { 'Retry-After': '5' } });
    await expectSameAsHttpResponse({ jsonBody: null });
    await expectSameAsHttpResponse({});
  });

  it('exactly as HttpResponse does for any plain JSON init', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            status: fc.constantFrom(200, 201, 202, 204, 205, 304, 400, 404, 409, 412, 500, 503),
            jsonBody: fc.oneof(fc.jsonValue(), fc.constant(undefined)),
            headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 6 }).map((pairs) => Object.fromEntries(pairs)),
          },
          { requiredKeys: [] },
        ),
        async (init) => expectSameAsHttpResponse(init as HttpResponseInit),
      ),
      { numRuns: 1000 },
    );
  });

  it('leaves anything but a plain JSON init to HttpResponse', () => {
    expect(plainAnswer({ body: 'text' })).toBeUndefined();
    expect(plainAnswer({ jsonBody: {}, cookies: [{ name: 'a', value: 'b' }] })).toBeUndefined();
    expect(plainAnswer({ jsonBody: {}, headers: new Headers({ a: 'b' }) })).toBeUndefined();
    expect(plainAnswer({ jsonBody: {}, headers: [['a', 'b']] })).toBeUndefined();
  });
});
