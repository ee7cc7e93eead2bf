import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig(import.meta.dirname);

// Every file starts real processes (server, agents, rauc); on 2 cores they run one file at
// a time. The global setup builds the server, agent, CLI and this harness first (tsc -b is
// incremental: a no-op when turbo has just built them) and runs the server's initdb once:
// each server a file starts on the embedded database resumes a copy of it. The harness's
// waits are bound by progress (waitForProgress, waitSettled, the simulator's waitForEvent):
// they fail when the work stops advancing, however long it takes to advance. The per-test
// and hook timeouts are only a backstop for a run that keeps advancing without ever finishing
// (a fleet starts in a beforeAll).
export default defineConfig({
  ...shared,
  test: { ...shared.test, fileParallelism: false, testTimeout: 900_000, hookTimeout: 900_000, globalSetup: ['test/helpers/global-setup.ts'] },
});
