/**
 * Waits for every one of the promises, so that no work goes on after the caller ends (an instance
 * may be frozen once its invocation returns, or once an HTTP function has answered); then fails with
 * the first failure, if there was one, or gives their values as Promise.all does. Promise.all fails
 * at the first failure and leaves the others running.
 */
export async function settleAll<T extends readonly unknown[] | []>(work: T): Promise<{ -readonly [P in keyof T]: Awaited<T[P]> }> {
  const outcomes: readonly PromiseSettledResult<unknown>[] = await Promise.allSettled(work);
  const failed = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return outcomes.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as { -readonly [P in keyof T]: Awaited<T[P]> };
}
