import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The app's tests, and the local stack's own (test/local/), against one stack.
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // The hostile suite ends the run with the number of attack cases it tried.
    reporters: ['default', './test/hostile/hostile-cases-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
