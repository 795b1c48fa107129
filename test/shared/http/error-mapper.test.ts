/**
 * The one error mapper, called with the InvocationContext the worker would give: every thrown value
 * becomes the contract's body; which failures count as an outage, what the log says about each, and
 * the configuration error reported once per process.
 */
import { describe, expect, it, vi } from 'vitest';
import { RuleError, type Refusal } from '../../../shared/domain/errors.js';
import { ApiError, ConfigurationError, DependencyUnavailableError } from '../../../shared/errors.js';
import { errorResponse } from '../../../shared/http/error-mapper.js';
import { loggedInvocation } from '../../support/logged-invocation.js';

const context = () => loggedInvocation('request-9');

const statusOf = (error: unknown) => errorResponse(error, 'en', context().invocation).status;
const withCode = (code: unknown) => Object.assign(new Error('failed'), { code });

describe('an outage of the database', () => {
  it('is any status Cosmos answers when busy or away, and no other', () => {
    for (const code of [408, 429, 449, 503]) expect(statusOf(withCode(code))).toBe(503);
    for (const code of [400, 404, 409, 412, 500]) expect(statusOf(withCode(code))).toBe(500);
  });

  it('is a network failure, and no other coded error', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EAI_AGAIN', 'EPIPE', 'UND_ERR_CONNECT_TIMEOUT', 'REQUEST_SEND_ERROR']) {
      expect(statusOf(withCode(code))).toBe(503);
    }
    for (const code of ['EACCES', 'ERR_INVALID_ARG_TYPE', '']) expect(statusOf(withCode(code))).toBe(500);
  });

  it('is a timeout or an abort, by name', () => {
    for (const name of ['TimeoutError', 'AbortError']) expect(statusOf(Object.assign(new Error('late'), { name }))).toBe(503);
    expect(statusOf(Object.assign(new Error('late'), { name: 'RangeError' }))).toBe(500);
  });

  it('is found among the causes, eight deep at most, so that a chain that loops ends', () => {
    const chain = (depth: number, last: Error) =>
      Array.from({ length: depth }).reduce<Error>((cause, _, index) => new Error(`level ${index}`, { cause }), last);
    expect(statusOf(chain(8, withCode('ECONNRESET')))).toBe(503);
    expect(statusOf(chain(9, withCode('ECONNRESET')))).toBe(500);
    expect(statusOf(chain(3, new Error('inner')))).toBe(500);
    const first = new Error('first');
    const second = new Error('second', { cause: first });
    Object.assign(first, { cause: second });
    const { invocation, lines } = context();
    expect(errorResponse(first, 'en', invocation).status).toBe(500);
    expect(lines[0]!.text).toBe(`Unexpected failure (request request-9): Error: first${'; caused by Error: second; caused by Error: first'.repeat(4)}`);
  });

  it('is never a value that is not an object', () => {
    for (const value of [null, undefined, 'ECONNRESET', 503, true]) expect(statusOf(value)).toBe(500);
  });

  it('is answered with the database message, Retry-After 5, and a warning naming the cause', () => {
    const { invocation, lines } = context();
    const answer = errorResponse(withCode(429), 'en', invocation);
    expect(answer.jsonBody).toEqual({
      error: 'Service Unavailable',
      message: 'The database is unavailable or busy. Try again shortly.',
      status: 503,
      requestId: 'request-9',
    });
    expect((answer.headers as Record<string, string>)['Retry-After']).toBe('5');
    expect(lines.filter((line) => line.level === 'warning').map((line) => line.text)).toEqual([
      'database unavailable (request request-9): Error (429): failed',
    ]);
  });
});

describe('an unreachable dependency', () => {
  it('is named in the answer and the log', () => {
    const expected = {
      identityProvider: 'The identity provider cannot be reached to check the token. Try again shortly.',
      database: 'The database is unavailable or busy. Try again shortly.',
      queue: 'The job queue cannot be reached',
    } as const;
    for (const dependency of ['identityProvider', 'database', 'queue'] as const) {
      const { invocation, lines } = context();
      const answer = errorResponse(new DependencyUnavailableError(dependency, new Error('socket hang up')), 'en', invocation);
      expect(answer.status).toBe(503);
      expect((answer.jsonBody as { message: string }).message).toContain(expected[dependency]);
      expect((answer.headers as Record<string, string>)['Retry-After']).toBe('5');
      expect(lines.find((line) => line.level === 'warning')?.text).toBe(`${dependency} unavailable (request request-9): Error: socket hang up`);
    }
  });
});

describe('an ApiError', () => {
  it('of the 5xx kind is logged as a warning with its cause; a 4xx is not logged', () => {
    const server = context();
    errorResponse(new ApiError(502, 'internalError', { requestId: 'x' }, { cause: withCode('EPROTO') }), 'en', server.invocation);
    expect(server.lines.filter((line) => line.level === 'warning').map((line) => line.text)).toEqual([
      'internalError (request request-9): Error (EPROTO): failed',
    ]);
    const client = context();
    errorResponse(new ApiError(499, 'forbidden'), 'en', client.invocation);
    errorResponse(new ApiError(404, 'projectNotFound', { id: 'PRJ-1' }), 'en', client.invocation);
    expect(client.lines).toEqual([]);
  });

  it('takes the short name of its status, or "Error" for one the contract does not name', () => {
    expect(errorResponse(new ApiError(418, 'forbidden'), 'en', context().invocation).jsonBody).toMatchObject({ error: 'Error', status: 418 });
    expect(errorResponse(new ApiError(412, 'forbidden'), 'en', context().invocation).jsonBody).toMatchObject({ error: 'Precondition Failed' });
  });

  it('has no details member unless it has details', () => {
    expect(errorResponse(new ApiError(404, 'projectNotFound', { id: 'PRJ-1' }), 'en', context().invocation).jsonBody).not.toHaveProperty('details');
  });

  it('of status 500 is logged too', () => {
    const { invocation, lines } = context();
    errorResponse(new ApiError(500, 'internalError', { requestId: 'x' }), 'en', invocation);
    expect(lines.map((line) => line.level)).toEqual(['warning']);
  });

  it('is JSON, as its Content-Type says', () => {
    expect(errorResponse(new ApiError(404, 'projectNotFound', { id: 'PRJ-1' }), 'en', context().invocation).headers).toMatchObject({
      'Content-Type': 'application/json; charset=utf-8',
    });
  });

  it('keeps the headers every answer has next to its own', () => {
    const answer = errorResponse(new ApiError(401, 'tokenInvalid', {}, { headers: { 'WWW-Authenticate': 'Bearer' } }), 'ja', context().invocation);
    expect(answer.headers).toMatchObject({ 'WWW-Authenticate': 'Bearer', 'X-Request-Id': 'request-9', 'Content-Language': 'ja', 'Cache-Control': 'no-store' });
  });
});

describe('an unexpected failure', () => {
  it('is logged as an error with its name, code, message (cut at 300 characters) and causes; its stack only at debug level', () => {
    const { invocation, lines } = context();
    const error = Object.assign(new TypeError('x'.repeat(400), { cause: Object.assign(new RangeError('inner'), { code: 7 }) }), { code: 'E_OUTER' });
    const answer = errorResponse(error, 'en', invocation);
    expect(answer.jsonBody).toEqual({
      error: 'Server Error',
      message: 'Something went wrong inside the service. Quote request id request-9 when reporting it.',
      status: 500,
      requestId: 'request-9',
    });
    expect(lines.filter((line) => line.level === 'error').map((line) => line.text)).toEqual([
      `Unexpected failure (request request-9): TypeError (E_OUTER): ${'x'.repeat(300)}; caused by RangeError (7): inner`,
    ]);
    const debug = lines.filter((line) => line.level === 'debug').map((line) => line.text);
    expect(debug).toHaveLength(1);
    expect(debug[0]).toMatch(/^Unexpected failure \(request request-9\): TypeError: x+\n\s+at /);
  });

  it('that is not an Error is logged by its type only, with no stack', () => {
    const { invocation, lines } = context();
    errorResponse('secret-token-value', 'en', invocation);
    expect(lines).toEqual([{ level: 'error', text: 'Unexpected failure (request request-9): string' }]);
  });

  it('with a code that is neither text nor number, or a cause that is not an Error, shows neither', () => {
    const { invocation, lines } = context();
    const error = Object.assign(new Error('odd', { cause: 'text cause' }), { code: { nested: true } });
    delete (error as { stack?: string }).stack;
    errorResponse(error, 'en', invocation);
    expect(lines).toEqual([{ level: 'error', text: 'Unexpected failure (request request-9): Error: odd' }]);
  });
});

describe('a configuration error', () => {
  it('is a 500 that names no setting, reported once per process in the log', async () => {
    vi.resetModules();
    const { errorResponse: fresh } = await import('../../../shared/http/error-mapper.js');
    const { ConfigurationError: FreshConfigurationError } = await import('../../../shared/errors.js');
    const { invocation, lines } = context();
    const error = new FreshConfigurationError(['AUTH_TENANT_ID is not set', 'COSMOS_DATABASE is not set']);
    const answer = fresh(error, 'en', invocation);
    fresh(error, 'en', invocation);
    expect(answer).toMatchObject({
      status: 500,
      jsonBody: { error: 'Server Error', message: 'The service is not configured. The operator has been told.', status: 500, requestId: 'request-9' },
    });
    expect(lines).toEqual([{ level: 'error', text: 'Refusing requests until the app is configured: AUTH_TENANT_ID is not set; COSMOS_DATABASE is not set' }]);
    expect(error).toBeInstanceOf(FreshConfigurationError);
    expect(new ConfigurationError([])).toBeInstanceOf(Error);
  });
});

describe('the error mapper', () => {
  it('renders an ApiError with its status, short name, message in the language asked for, and extras', () => {
    const { invocation } = context();
    const error = new ApiError(409, 'ragJobActive', { id: 'job-1' }, { extra: { activeJobId: 'job-1' }, headers: { 'Retry-After': '3' } });
    const english = errorResponse(error, 'en', invocation);
    expect(english).toMatchObject({ status: 409, jsonBody: { error: 'Conflict', status: 409, requestId: 'request-9', activeJobId: 'job-1' } });
    expect((english.headers as Record<string, string>)['Retry-After']).toBe('3');
    const japanese = errorResponse(error, 'ja', invocation);
    expect((japanese.jsonBody as { message: string }).message).not.toBe((english.jsonBody as { message: string }).message);
    expect((japanese.headers as Record<string, string>)['Content-Language']).toBe('ja');
  });

  it("logs why a caller was refused (401, 403) with the request id, as its answer says it, so the host's log shows more than a status", () => {
    const { invocation, lines } = context();
    const challenge = { 'WWW-Authenticate': 'Bearer error="invalid_token"' };
    errorResponse(new ApiError(401, 'tokenWrongAudience', {}, { headers: challenge }), 'ja', invocation);
    errorResponse(new ApiError(403, 'forbidden', { permission: 'projects:write' }), 'en', invocation);
    const audience = "The access token was issued for another resource: its audience (aud) is not this API's App ID URI or client id.";
    expect(lines).toEqual([
      { level: 'information', text: `Refused with 401 tokenWrongAudience (request request-9): ${audience}` },
      { level: 'information', text: expect.stringMatching(/^Refused with 403 forbidden \(request request-9\): .*projects:write/) },
    ]);
    // Any other refusal is the caller's to read in its answer: the log stays quiet.
    errorResponse(new ApiError(400, 'validationFailed'), 'en', invocation);
    errorResponse(new ApiError(404, 'projectNotFound', { id: 'PRJ-1' }), 'en', invocation);
    expect(lines).toHaveLength(2);
  });

  it('lists validation details', () => {
    const error = new ApiError(400, 'validationFailed', {}, { details: [{ path: 'name', message: 'Required' }] });
    expect(errorResponse(error, 'en', context().invocation).jsonBody).toMatchObject({ error: 'Bad Request', details: [{ path: 'name', message: 'Required' }] });
  });

  it('answers a missing setting with a 500 that names no setting, and says once in the log which are missing', () => {
    const { invocation, lines } = context();
    const error = new ConfigurationError(['AUTH_TENANT_ID is not set']);
    const answer = errorResponse(error, 'en', invocation);
    errorResponse(error, 'en', invocation);
    expect(answer).toMatchObject({ status: 500, jsonBody: { error: 'Server Error', status: 500 } });
    expect(JSON.stringify(answer.jsonBody)).not.toContain('AUTH_TENANT_ID');
    expect(lines.filter((line) => line.text.includes('AUTH_TENANT_ID')).length).toBeLessThanOrEqual(1);
  });

  it('answers an unreachable dependency, or a database that keeps throttling, with a 503 and Retry-After', () => {
    for (const error of [new DependencyUnavailableError('queue'), Object.assign(new Error('Request rate is large'), { code: 429 })]) {
      const answer = errorResponse(error, 'en', context().invocation);
      expect(answer).toMatchObject({ status: 503, jsonBody: { error: 'Service Unavailable', status: 503 } });
      expect((answer.headers as Record<string, string>)['Retry-After']).toMatch(/^\d+$/);
    }
  });

  it('answers anything else with a 500 that leaks nothing, and logs it with the request id', () => {
    const { invocation, lines } = context();
    const answer = errorResponse(new TypeError("Cannot read properties of undefined (reading 'secret')"), 'en', invocation);
    expect(answer).toMatchObject({ status: 500, jsonBody: { error: 'Server Error', status: 500, requestId: 'request-9' } });
    expect(JSON.stringify(answer.jsonBody)).not.toMatch(/TypeError|secret/);
    expect(lines.some((line) => line.level === 'error' && line.text.includes('request-9'))).toBe(true);
  });
});

describe("a rule's refusal", () => {
  it.each<[Refusal, number, string]>([
    ['invalid', 400, 'Bad Request'],
    ['notFound', 404, 'Not Found'],
    ['conflict', 409, 'Conflict'],
    ['contended', 409, 'Conflict'],
    ['stale', 412, 'Precondition Failed'],
    ['keyReused', 422, 'Unprocessable Content'],
  ])('%s is a %i', (refusal, status, name) => {
    expect(errorResponse(new RuleError(refusal, 'projectNotFound', { id: 'PRJ-1' }), 'en', context().invocation)).toMatchObject({
      status,
      jsonBody: { error: name, status, message: expect.stringContaining('PRJ-1') },
    });
  });

  it('carries its extras, and tells a contended change when to come back', () => {
    const active = errorResponse(new RuleError('conflict', 'ragJobActive', { id: 'job-1' }, { activeJobId: 'job-1' }), 'en', context().invocation);
    expect(active.jsonBody).toMatchObject({ activeJobId: 'job-1' });
    expect(active.headers).not.toHaveProperty('Retry-After');
    const contended = errorResponse(new RuleError('contended', 'changeContended', { id: 'PRJ-1' }), 'en', context().invocation);
    expect(contended.headers).toMatchObject({ 'Retry-After': '1' });
  });
});
