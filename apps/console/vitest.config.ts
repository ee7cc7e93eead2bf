import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig(import.meta.dirname);

// Every browser test file starts a real server (and agents) and drives one Chromium: one file
// at a time on a 2-core machine.
export default defineConfig({
  ...shared,
  test: { ...shared.test, fileParallelism: false, testTimeout: 120_000 },
});
