import { resolve, basename } from 'node:path';
import type { ViteUserConfig } from 'vitest/config';

const root = import.meta.dirname;

/**
 * One test configuration for every package. Workspace packages resolve to their
 * TypeScript sources so a test never runs against a stale build, and every run
 * writes a JSON report that scripts/test-summary.mjs adds up into the closing
 * "N passed, N failed" line CI reads.
 */
export function sharedTestConfig(pkgDir: string): ViteUserConfig {
  return {
    resolve: {
      alias: {
        '@svc/release-core': resolve(root, 'packages/release-core/src/index.ts'),
        '@svc/device-proto': resolve(root, 'packages/device-proto/src/index.ts'),
      },
    },
    test: {
      include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
      testTimeout: 30_000,
      hookTimeout: 120_000,
      pool: 'forks',
      reporters: ['default', ['json', { outputFile: resolve(root, '.vitest-reports', `${basename(resolve(pkgDir, '..'))}-${basename(pkgDir)}.json`) }]],
    },
  };
}
