import { defineConfig } from 'vitest/config';

/**
 * The fast tests Stryker runs against each mutant (`npm run mutation`): in-process only, no embedded
 * stack and no global setup that starts one, so a run fits in minutes on a small machine.
 */
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/http/error-mapper.test.ts'],
    // Lists every file of the project: not a test of the mutated modules, and slow.
    exclude: ['test/unit/settings.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
