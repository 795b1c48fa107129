/** What the benchmarks share: the load they put on the API, and how they sum up repeated runs. */

/** Requests in flight at once: autocannon's connections, and the in-process calls. */
export const CONCURRENT_REQUESTS = 32;

/** The middle value; for an even count, the mean of the two middle ones. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2;
}
