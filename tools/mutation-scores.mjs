/**
 * The per-file table of the latest mutation run (reports/mutation/mutation.json, the
 * mutation-testing-report schema), and a failure when any file scores under the threshold:
 * Stryker's own `break` looks only at the total. `node tools/mutation-scores.mjs [threshold]`.
 */
import { readFileSync } from 'node:fs';

const REPORT = 'reports/mutation/mutation.json';
const threshold = Number(process.argv[2] ?? 90);
const DETECTED = new Set(['Killed', 'Timeout']);
const INVALID = new Set(['CompileError', 'RuntimeError', 'Ignored']);

const report = JSON.parse(readFileSync(REPORT, 'utf8'));
const rows = Object.entries(report.files)
  .map(([file, { mutants }]) => {
    const valid = mutants.filter((mutant) => !INVALID.has(mutant.status));
    const detected = valid.filter((mutant) => DETECTED.has(mutant.status)).length;
    const survived = valid.filter((mutant) => mutant.status === 'Survived').length;
    const noCoverage = valid.filter((mutant) => mutant.status === 'NoCoverage').length;
    const score = valid.length ? (100 * detected) / valid.length : 100;
    return { file, score, detected, survived, noCoverage, total: valid.length };
  })
  .sort((a, b) => a.file.localeCompare(b.file));

const width = Math.max(...rows.map((row) => row.file.length));
console.log(`\n${'file'.padEnd(width)}   score  killed  survived  no coverage  mutants`);
const cell = (value, size) => String(value).padStart(size);
for (const row of rows) {
  const mark = row.score < threshold ? `  < ${threshold}` : '';
  const counts = `${cell(row.detected, 6)}  ${cell(row.survived, 8)}  ${cell(row.noCoverage, 11)}  ${cell(row.total, 7)}`;
  console.log(`${row.file.padEnd(width)}  ${cell(row.score.toFixed(1), 5)} %  ${counts}${mark}`);
}
const below = rows.filter((row) => row.score < threshold);
if (below.length) {
  console.error(`\n${below.length} file(s) under ${threshold} %: ${below.map((row) => row.file).join(', ')}`);
  process.exit(1);
}
console.log(`\nEvery file at ${threshold} % or more. Report: ${REPORT}`);
