// Adds up the vitest JSON reports of every package into the one closing line
// CI reads. A package whose tests did not run at all leaves no report: that is
// named, and counts as a failure, so "no tests ran" can never look green.
// Before that line it names the ten slowest test files of the run (from the
// `<package>.timings.json` files vitest.shared.ts writes beside the reports).
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const dir = join(import.meta.dirname, '..', '.vitest-reports');
const expected = JSON.parse(readFileSync(join(import.meta.dirname, 'test-packages.json'), 'utf8'));
let passed = 0,
  failed = 0,
  skipped = 0;
const seen = new Set();
if (existsSync(dir)) {
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.json') && !f.endsWith('.timings.json'))) {
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
const timings = existsSync(dir)
  ? readdirSync(dir)
      .filter((f) => f.endsWith('.timings.json'))
      .flatMap((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')).map((t) => ({ ...t, pkg: f.replace(/\.timings\.json$/, '') })))
  : [];
if (timings.length > 0) {
  console.log('slowest test files (seconds: total, of which import):');
  for (const t of timings.sort((a, b) => b.ms - a.ms).slice(0, 10)) {
    console.log(`  ${(t.ms / 1000).toFixed(1).padStart(7)} ${(t.importMs / 1000).toFixed(1).padStart(6)}  ${t.pkg}/${t.file}`);
  }
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
