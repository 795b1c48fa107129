import { vi } from 'vitest';

/** Waits until `check` gives a truthy value and gives it back; past the deadline, fails naming the check. */
export function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 15_000): Promise<NonNullable<T>> {
  return vi.waitFor(
    async () => {
      const value = await check();
      if (!value) throw new Error(`Still waiting for ${check.toString()}`);
      return value;
    },
    { timeout: timeoutMs, interval: 50 },
  );
}

/** Resolves when `release` is called; `reached` says that the holder got there. */
export function gate() {
  let release!: () => void;
  let arrive!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const reached = new Promise<void>((resolve) => (arrive = resolve));
  return { release, reached, pass: () => (arrive(), released) };
}
