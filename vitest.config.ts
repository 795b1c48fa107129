import { configDefaults, defineConfig } from 'vitest/config';

/** A test that needs the shared stack of test/global-setup.ts, or starts a Functions host of its own. */
export const STACK_TEST = '**/*.stack.test.ts';
/** The fast tests: every other test, in process, with a TLS certificate the workers trust. */
export const FAST_TESTS = {
  include: ['test/**/*.test.ts'],
  exclude: [...configDefaults.exclude, STACK_TEST],
  globalSetup: ['test/support/trusted-tls-setup.ts'],
};

export default defineConfig({
  test: {
    // The hostile suite ends the run with the number of attack cases it tried.
    reporters: ['default', './test/hostile/hostile-cases-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // `npm test` runs both; `npm run test:fast` the fast ones alone.
    // The fast tests first, four files at a time even on two cores: they mostly wait on the processes they start.
    projects: [
      { extends: true, test: { name: 'fast', ...FAST_TESTS, maxWorkers: 4, sequence: { groupOrder: 0 } } },
      {
        extends: true,
        test: {
          name: 'stack',
          include: [`test/${STACK_TEST}`],
          globalSetup: ['test/global-setup.ts'],
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
