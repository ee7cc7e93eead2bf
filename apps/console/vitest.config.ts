import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig(import.meta.dirname);

// Every browser test file starts a real server (and agents) and drives one Chromium: one file
// at a time on a 2-core machine. Heavy writes are awaited without a time limit (clickForAnswer);
// the test and hook timeouts (servers start in a beforeAll) are only the backstop for a run that
// stopped making progress. The global setup runs the server's initdb once; each server a file
// starts resumes a copy of it.
export default defineConfig({
  ...shared,
  test: { ...shared.test, fileParallelism: false, testTimeout: 600_000, hookTimeout: 600_000, globalSetup: ['test/helpers/global-setup.ts'] },
});
