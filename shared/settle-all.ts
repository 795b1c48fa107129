/**
 * Waits for every one of the promises, so that no work goes on after the caller ends (an instance
 * may be frozen once its invocation returns); then fails with the first failure, if there was one.
 */
export async function settleAll(work: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
}
