// Adds up the vitest JSON reports of every package into the one closing line
// CI reads. A package whose tests did not run at all leaves no report: that is
// named, and counts as a failure, so "no tests ran" can never look green.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const dir = join(import.meta.dirname, '..', '.vitest-reports');
const expected = JSON.parse(readFileSync(join(import.meta.dirname, 'test-packages.json'), 'utf8'));
let passed = 0,
  failed = 0,
  skipped = 0;
const seen = new Set();
if (existsSync(dir)) {
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const r = JSON.parse(readFileSync(join(dir, f), 'utf8'));
    seen.add(f.replace(/\.json$/, ''));
    passed += r.numPassedTests;
    // A file that failed without a failing test (an import error, a failing hook) counts once.
    const brokenFiles = (r.testResults ?? []).filter((t) => t.status === 'failed' && !t.assertionResults.some((a) => a.status === 'failed')).length;
    failed += r.numFailedTests + brokenFiles;
    skipped += r.numPendingTests + (r.numTodoTests ?? 0);
    console.log(`  ${f.replace(/\.json$/, '').padEnd(28)} ${r.numPassedTests} passed, ${r.numFailedTests + brokenFiles} failed, ${r.numPendingTests} skipped`);
  }
}
for (const name of expected) {
  if (!seen.has(name)) {
    console.log(`  ${name.padEnd(28)} NO REPORT (its tests did not run)`);
    failed += 1;
  }
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
