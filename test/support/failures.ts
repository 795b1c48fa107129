import { ApiError } from '../../shared/errors.js';

/** What the call failed with; a call that succeeds, or throws something that is not an Error, fails the test. */
export async function errorOf(call: Promise<unknown>): Promise<Error & { code?: unknown }> {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof Error)) throw new Error(`Expected an error, got ${String(error)}`);
  return error;
}

/** The ApiError the call failed with: the answer the caller would get. */
export async function failureOf(call: Promise<unknown>): Promise<ApiError> {
  const error = await errorOf(call);
  if (!(error instanceof ApiError)) throw new Error(`Expected an ApiError, got ${String(error)}`);
  return error;
}
