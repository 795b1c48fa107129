/**
 * Counting the hostile cases: each test of the hostile suite (test/hostile/) records how many cases
 * it tried in its meta, and test/hostile/hostile-cases-reporter.ts adds them up when the run ends.
 */
import { expect, it } from 'vitest';

declare module 'vitest' {
  interface TaskMeta {
    /** How many hostile cases (attacks, faults, random inputs) the test tried. */
    hostileCases?: number;
    /** How many answers of the test file passed the checks every answer must pass. */
    responsesChecked?: number;
  }
}

export class CaseCounter {
  count = 0;
  add(cases = 1): void {
    this.count += cases;
  }
}

/**
 * A test whose cases are counted for the run's total. The body adds each case it tries; the count
 * goes into the test's meta, which the hostile-cases reporter sums up when the run ends.
 */
export function hostileTest(name: string, body: (cases: CaseCounter) => Promise<void>, timeout?: number): void {
  it(
    name,
    async ({ task }) => {
      const cases = new CaseCounter();
      try {
        await body(cases);
      } finally {
        task.meta.hostileCases = cases.count;
      }
      expect(cases.count, 'a hostile test tries at least one case').toBeGreaterThan(0);
    },
    timeout,
  );
}
