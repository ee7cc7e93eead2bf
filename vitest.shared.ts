import { spawnSync } from 'node:child_process';
import { resolve, basename } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { ViteUserConfig } from 'vitest/config';
import type { Reporter, TestModule } from 'vitest/node';

const root = import.meta.dirname;
const reportsDir = resolve(root, '.vitest-reports');

/**
 * Writes each test file's own time (environment, import, setup, hooks and tests, as vitest
 * measured them in its worker) to `.vitest-reports/<package>.timings.json`, so the closing
 * summary can name the slowest files of the whole run.
 */
class FileTimingsReporter implements Reporter {
  constructor(private readonly file: string) {}
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const files = modules.map((m) => {
      const d = m.diagnostic();
      const ms = d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration;
      return { file: m.relativeModuleId, ms: Math.round(ms), importMs: Math.round(d.collectDuration), state: m.state() };
    });
    mkdirSync(reportsDir, { recursive: true });
    writeFileSync(this.file, JSON.stringify(files));
  }
}

/**
 * One test configuration for every package. Workspace packages resolve to their
 * TypeScript sources so a test never runs against a stale build, and every run
 * writes a JSON report that scripts/test-summary.mjs adds up into the closing
 * "N passed, N failed" line CI reads.
 */
export function sharedTestConfig(pkgDir: string): ViteUserConfig {
  const name = `${basename(resolve(pkgDir, '..'))}-${basename(pkgDir)}`;
  return {
    resolve: {
      // Subpaths before the package name: an alias also matches the name followed by `/...`.
      // `#crypto/default` is release-core's own import of its default provider (package.json
      // `imports`): the node one here, from the sources too.
      alias: {
        '@svc/release-core/der': resolve(root, 'packages/release-core/src/encoding/der.ts'),
        '@svc/release-core/x509': resolve(root, 'packages/release-core/src/x509/peculiar.ts'),
        '#crypto/default': resolve(root, 'packages/release-core/src/crypto/default.ts'),
        '@svc/release-core': resolve(root, 'packages/release-core/src/index.ts'),
        '@svc/device-proto': resolve(root, 'packages/device-proto/src/index.ts'),
        '@svc/test-kit': resolve(root, 'packages/test-kit/src/index.ts'),
      },
    },
    test: {
      include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
      testTimeout: 30_000,
      hookTimeout: 120_000,
      pool: 'forks',
      reporters: [
        'default',
        ['json', { outputFile: resolve(reportsDir, `${name}.json`) }],
        new FileTimingsReporter(resolve(reportsDir, `${name}.timings.json`)),
      ],
    },
  };
}

/**
 * For a test that needs a system tool (openssl, rauc, docker-registry, ...): true when it is
 * on PATH; otherwise the test skips LOUDLY, naming the Debian package, except under CI=true,
 * where .ci/run has installed it and its absence is a failure.
 */
export function requireTool(tool: string, aptPackage: string = tool): boolean {
  if (spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0) return true;
  if (process.env['CI'] === 'true') throw new Error(`${tool} is required in CI: apt-get install ${aptPackage}`);
  console.warn(`SKIPPING: ${tool} not found; install the Debian package "${aptPackage}" to run these tests`);
  return false;
}
