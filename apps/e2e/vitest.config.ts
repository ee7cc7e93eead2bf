import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig(import.meta.dirname);

// Every file starts real processes (server, agents, rauc); on 2 cores they run one file at
// a time. The global setup builds the server, agent, CLI and this harness first (tsc -b is
// incremental: a no-op when turbo has just built them).
export default defineConfig({
  ...shared,
  test: { ...shared.test, fileParallelism: false, testTimeout: 120_000, globalSetup: ['test/helpers/global-setup.ts'] },
});
