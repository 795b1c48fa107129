/**
 * The mutation run's reporter for a test file that cannot even be imported: it gets one failed test,
 * "the file loads", carrying the import's error. Stryker's vitest runner (9.6, 10.0 alike) scores a
 * mutant by the tests it collects, and such a file collects none, so a mutant that stops a module
 * from loading (a schema made when the module loads, say) would count as survived, though every test
 * of the module fails (stryker-js#6150). A file that loaded is left as it is.
 */
import type { RunnerTestCase } from 'vitest';
import { experimental_getRunnerTask, type Reporter, type TestModule } from 'vitest/node';

export class UnloadedFileReporter implements Reporter {
  onTestRunEnd(testModules: readonly TestModule[]): void {
    for (const file of testModules.map((testModule) => experimental_getRunnerTask(testModule))) {
      if (file.result?.state !== 'fail' || file.tasks.length > 0) continue;
      // Every field a reporter may read (the compiler holds it to vitest's own type), but the context only a running test has.
      const loads: Omit<RunnerTestCase, 'context'> = {
        type: 'test',
        id: `${file.id}_loads`,
        name: 'the file loads',
        fullName: `${file.name} > the file loads`,
        fullTestName: 'the file loads',
        mode: 'run',
        meta: {},
        tags: [],
        file,
        suite: file,
        timeout: 0,
        annotations: [],
        artifacts: [],
        result: { state: 'fail', errors: file.result.errors ?? [] },
      };
      file.tasks.push(loads as RunnerTestCase);
    }
  }
}
