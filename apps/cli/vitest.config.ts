import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig(import.meta.dirname);

// The tests run the real built binary (bin/run.js -> dist), so the package is built
// once before any test file starts (a no-op when turbo already built it).
export default defineConfig({
  ...shared,
  test: { ...shared.test, globalSetup: ['test/helpers/global-setup.ts'] },
});
