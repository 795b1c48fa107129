/**
 * Ends the run with the number of hostile cases tried: each test of test/hostile/ records its count
 * in its meta (`hostileCases`, see test/support/hostile-cases.ts), and this reporter adds them up, per
 * file and in all; the last line of the run is the total.
 * Enabled in vitest.config.ts: `reporters: ['default', './test/hostile/hostile-cases-reporter.ts']`.
 */
import { basename } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
// The meta fields (hostileCases, responsesChecked) are declared there.
import type {} from '../support/hostile-cases.js';

export default class HostileCasesReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let cases = 0;
    let tests = 0;
    let failed = 0;
    let responses = 0;
    const perFile: string[] = [];
    for (const testModule of testModules) {
      let fileCases = 0;
      for (const test of testModule.children.allTests()) {
        responses += test.meta().responsesChecked ?? 0;
        const tried = test.meta().hostileCases;
        if (tried === undefined) continue;
        fileCases += tried;
        tests += 1;
        if (test.result().state === 'failed') failed += 1;
      }
      if (fileCases) perFile.push(`${basename(testModule.moduleId).replace(/(\.stack)?\.test\.ts$/, '')} ${fileCases}`);
      cases += fileCases;
    }
    if (tests === 0) return;
    process.stdout.write(`\nHostile cases per file: ${perFile.sort().join(', ')}; ${responses} answers checked for the contract's headers and error shape\n`);
    process.stdout.write(`Hostile cases tried: ${cases} (in ${tests} hostile tests, ${failed} failed)\n`);
  }
}
