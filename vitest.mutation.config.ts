import { defineConfig } from 'vitest/config';

/**
 * The fast tests Stryker runs against each mutant (`npm run mutation`): in-process only, no embedded
 * stack (the global setup only makes a TLS certificate the workers trust), so a run fits in minutes on a small machine.
 */
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/http/*.test.ts', 'test/rag/*.test.ts'],
    // Lists every file of the project: not a test of the mutated modules, and slow.
    exclude: ['test/unit/settings.test.ts'],
    globalSetup: ['test/unit/trusted-tls-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
