/** Entra's errors: what the provider's parts throw, and the JSON body Entra answers them with. */
import { randomUUID } from 'node:crypto';

export class EntraError extends Error {
  constructor(
    readonly error: string,
    readonly code: number,
    description: string,
    /** Members Entra adds for errors a user can resolve: suberror, and claims for a claims challenge. */
    readonly details: { suberror?: string; claims?: string } = {},
  ) {
    super(`AADSTS${code}: ${description}`);
  }
}

/** Entra's words for a form it cannot read. */
export const malformedRequest = (detail: string) => new EntraError('invalid_request', 9002313, `Invalid request. Request is malformed or invalid. - ${detail}`);

export function entraErrorBody(error: EntraError, correlationId: string): Record<string, unknown> {
  const traceId = randomUUID();
  const timestamp = `${new Date().toISOString().slice(0, 19).replace('T', ' ')}Z`;
  return {
    error: error.error,
    error_description: `${error.message} Trace ID: ${traceId} Correlation ID: ${correlationId} Timestamp: ${timestamp}`,
    error_codes: [error.code],
    timestamp,
    trace_id: traceId,
    correlation_id: correlationId,
    error_uri: `https://login.microsoftonline.com/error?code=${error.code}`,
    ...error.details,
  };
}

/** Entra's words for an assertion outside its lifetime, with times as Entra writes them: ISO 8601 with seven fractional digits. */
export function outsideLifetime(assertion: string, expiry = 0): string {
  const time = (milliseconds: number) => new Date(milliseconds).toISOString().replace(/Z$/, '0000Z');
  return `${assertion} is not within its valid time range. Current time: ${time(Date.now())}, expiry time of assertion ${time(expiry * 1000)}.`;
}
