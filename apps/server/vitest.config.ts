import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig(import.meta.dirname);

// Most server test files wait on something real (PostgreSQL, PGlite's file I/O, child
// processes, gRPC over loopback) rather than compute, so three files at a time finish the
// suite much sooner than vitest's default of cores-1 (one, on this 2-core machine).
export default defineConfig({
  ...shared,
  test: { ...shared.test, maxWorkers: 3 },
});
