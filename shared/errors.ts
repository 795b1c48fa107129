import type { MessageKey } from './messages/catalog.js';

/** The short names the contract gives each status (the specification's own for 400–404 and 500). */
export const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

export interface ErrorDetail {
  path: string;
  message: string;
}

/** A failure the client can act on; the error mapper renders it in the caller's language. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly messageKey: MessageKey,
    readonly params: Record<string, string | number> = {},
    readonly options: { details?: ErrorDetail[]; headers?: Record<string, string>; extra?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(messageKey, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
  }
}

/** A required setting is absent or malformed: the app refuses requests rather than guess. */
export class ConfigurationError extends Error {
  constructor(readonly problems: string[]) {
    super(`The app is not configured: ${problems.join('; ')}`);
    this.name = 'ConfigurationError';
  }
}

/** A dependency (identity provider, database, queue) cannot be reached right now. */
export class DependencyUnavailableError extends Error {
  constructor(
    readonly dependency: 'identityProvider' | 'database' | 'queue',
    override readonly cause?: unknown,
  ) {
    super(`${dependency} unavailable`);
    this.name = 'DependencyUnavailableError';
  }
}

export const badRequest = (key: MessageKey, params?: Record<string, string | number>, details?: ErrorDetail[]) =>
  new ApiError(400, key, params, details ? { details } : {});
