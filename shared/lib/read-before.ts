/**
 * A response body's read, bounded by the request's deadline. Node's fetch can leave a body read pending for ever
 * when its signal aborts after the read began (nodejs/node#56917, open on Node 22): a peer that sends its headers
 * and then stalls would hold the invocation until the host's timeout. No well-kept library races a promise
 * against an AbortSignal without leaving a listener behind, hence these lines.
 */
export async function readBefore<T>(signal: AbortSignal, read: Promise<T>): Promise<T> {
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason as Error);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort);
  });
  try {
    // The race handles a failure of the read that comes after the deadline won: none goes unhandled.
    return await Promise.race([read, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
