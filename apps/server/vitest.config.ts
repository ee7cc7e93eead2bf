import { readFileSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig(import.meta.dirname);

/** A file that starts processes (the built server, crash children): each costs seconds of CPU. */
const STARTS_PROCESSES = /\b(startMain|runMain|auditCrashSuite|runChildUntilKilled|spawn|fork)\(/;

/**
 * The files that start processes first, then the rest, each group in vitest's own order
 * (slowest first when a previous run's durations are cached, else largest first). On a fresh
 * clone vitest knows no durations and sorts by size: these files are small, ran last and
 * left one worker busy for minutes at the end while the other cores idled.
 */
class ProcessesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const heavy = (f: TestSpecification) => STARTS_PROCESSES.test(readFileSync(f.moduleId, 'utf8'));
    const first = sorted.filter(heavy);
    return [...first, ...sorted.filter((f) => !first.includes(f))];
  }
}

// Most server test files wait on something real (PostgreSQL, PGlite's file I/O, child
// processes, gRPC over loopback) rather than compute, so three files at a time finish the
// suite much sooner than vitest's default of cores-1 (one, on this 2-core machine). The files
// of a worker share its imported modules (isolate: false): importing the app costs seconds of
// CPU, paid once per worker instead of once per file; no file mocks modules or changes
// process.env, and each makes its own stores, apps and tenants (docs/development.md).
// The global setup makes the PGlite cluster every file's PGlite, and every process a test
// starts on a fresh data dir, starts from.
export default defineConfig({
  ...shared,
  test: {
    ...shared.test,
    maxWorkers: 3,
    isolate: false,
    globalSetup: ['test/helpers/global-setup.ts'],
    sequence: { sequencer: ProcessesFirst },
  },
});
