import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

const shared = sharedTestConfig(import.meta.dirname);

/**
 * The unit tier (`pnpm --filter @svc/server run test:unit`): the `*.unit.test.ts` files, pure
 * rules that boot no app, open no store and start no process, so no global setup. The main
 * configuration (vitest.config.ts) collects them too, once, with everything else.
 */
export default defineConfig({
  ...shared,
  test: {
    ...shared.test,
    include: ['test/**/*.unit.test.ts', 'src/**/*.unit.test.ts'],
    reporters: ['default'],
  },
});
