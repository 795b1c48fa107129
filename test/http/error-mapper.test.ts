/** The one error mapper, called with the InvocationContext the worker would give: every thrown value becomes the contract's body. */
import { describe, expect, it } from 'vitest';
import { ApiError, ConfigurationError, DependencyUnavailableError } from '../../shared/errors.js';
import { errorResponse } from '../../shared/http/error-mapper.js';
import { loggedInvocation } from '../support/logged-invocation.js';

const context = () => loggedInvocation('request-7');

describe('the error mapper', () => {
  it('renders an ApiError with its status, short name, message in the language asked for, and extras', () => {
    const { invocation } = context();
    const error = new ApiError(409, 'ragJobActive', { id: 'job-1' }, { extra: { activeJobId: 'job-1' }, headers: { 'Retry-After': '3' } });
    const english = errorResponse(error, 'en', invocation);
    expect(english).toMatchObject({ status: 409, jsonBody: { error: 'Conflict', status: 409, requestId: 'request-7', activeJobId: 'job-1' } });
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
      { level: 'information', text: `Refused with 401 tokenWrongAudience (request request-7): ${audience}` },
      { level: 'information', text: expect.stringMatching(/^Refused with 403 forbidden \(request request-7\): .*projects:write/) },
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
    expect(answer).toMatchObject({ status: 500, jsonBody: { error: 'Server Error', status: 500, requestId: 'request-7' } });
    expect(JSON.stringify(answer.jsonBody)).not.toMatch(/TypeError|secret/);
    expect(lines.some((line) => line.level === 'error' && line.text.includes('request-7'))).toBe(true);
  });
});
