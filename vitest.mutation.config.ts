import { defineConfig } from 'vitest/config';
import { UnloadedFileReporter } from './test/support/unloaded-file-reporter.js';

/**
 * The fast tests Stryker runs against each mutant (`npm run mutation`): in process, with no host and no
 * shared stack. A file starts in its own process what its module talks to (the embedded store, an
 * Azurite, a receiver); the global setup only makes a TLS certificate the workers trust.
 */
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/http/*.test.ts', 'test/shared/**/*.test.ts'],
    // Lists every file of the project: not a test of the mutated modules, and slow.
    exclude: ['test/shared/settings/catalog.test.ts', 'test/**/*.stack.test.ts'],
    globalSetup: ['test/support/trusted-tls-setup.ts'],
    // A file that cannot be imported is a failed test, so that Stryker counts the mutant that broke it as killed.
    reporters: [new UnloadedFileReporter(), 'default'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
