import { defineConfig } from 'vitest/config';
import { UnloadedFileReporter } from './test/support/unloaded-file-reporter.js';
import { FAST_TESTS } from './vitest.config.js';

/**
 * The fast tests Stryker runs against each mutant (`npm run mutation`): in process, with no host and no
 * shared stack. A file starts in its own process what its module talks to (the embedded store, an
 * Azurite, a receiver); the global setup only makes a TLS certificate the workers trust.
 */
export default defineConfig({
  test: {
    ...FAST_TESTS,
    // Not tests of the mutated modules: the local stack's, the Bicep's (they read `npm run infra`'s output), and the
    // settings test, which lists every file of the project and is slow.
    exclude: [...FAST_TESTS.exclude, 'test/local/**', 'test/infra/**', 'test/shared/settings/catalog.test.ts'],
    // A file that cannot be imported is a failed test, so that Stryker counts the mutant that broke it as killed.
    reporters: [new UnloadedFileReporter(), 'default'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
