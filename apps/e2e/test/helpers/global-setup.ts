import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * Builds what the tests run as processes: apps/server, apps/agent, apps/cli (their dist/)
 * and this harness, through the project references of apps/e2e (tsc -b is incremental).
 */
export default function setup(): void {
  // Escape hatch for a caller that has just built (turbo's test-after-build, scripts/demo.mjs).
  if (process.env.SVC_E2E_NO_BUILD === '1') return;
  const cwd = resolve(import.meta.dirname, '..', '..');
  const r = spawnSync('pnpm', ['exec', 'tsc', '-b'], { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`building apps/e2e and its references failed (tsc -b exit ${r.status}):\n${r.stdout}${r.stderr}`);
}
