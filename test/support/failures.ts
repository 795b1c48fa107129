import { RuleError } from '../../shared/domain/errors.js';
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

/** The refusal the call failed with (a rule's, or the edge's): what the caller's answer is made from. */
export async function failureOf(call: Promise<unknown>): Promise<ApiError | RuleError> {
  const error = await errorOf(call);
  if (!(error instanceof ApiError || error instanceof RuleError)) throw new Error(`Expected a refusal, got ${String(error)}`);
  return error;
}
