import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig(import.meta.dirname);

// Most server test files wait on something real (PostgreSQL, PGlite's file I/O, child
// processes, gRPC over loopback) rather than compute, so three files at a time finish the
// suite much sooner than vitest's default of cores-1 (one, on this 2-core machine). The files
// of a worker share its imported modules (isolate: false): importing the app costs seconds of
// CPU, paid once per worker instead of once per file; no file mocks modules or changes
// process.env, and each makes its own stores, apps and tenants (docs/development.md).
// The global setup makes the PGlite cluster image every file's PGlite starts from.
export default defineConfig({
  ...shared,
  test: { ...shared.test, maxWorkers: 3, isolate: false, globalSetup: ['test/helpers/global-setup.ts'] },
});
