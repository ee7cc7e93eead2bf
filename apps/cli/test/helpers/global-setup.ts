import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

/** Builds apps/cli and the packages it references (tsc -b is incremental: cheap when current). */
export default function setup(): void {
  // Escape hatch for a caller that has just built (e.g. turbo's test-after-build).
  if (process.env.SVC_CLI_TEST_NO_BUILD === '1') return;
  const cwd = resolve(import.meta.dirname, '..', '..');
  const r = spawnSync('pnpm', ['exec', 'tsc', '-b'], { cwd, encoding: 'utf8' });
  if (r.status !== 0) {
    throw new Error(`building apps/cli failed (tsc -b exit ${r.status}):\n${r.stdout}${r.stderr}`);
  }
}
