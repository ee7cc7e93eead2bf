import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { makePgliteCluster, PGLITE_CLUSTER_ENV } from '../../src/pglite-cluster.js';

/**
 * Builds what the tests run as processes: apps/server, apps/agent, apps/cli (their dist/)
 * and this harness, through the project references of apps/e2e (tsc -b is incremental).
 * Then runs the server's initdb once: every server a test starts on the embedded database
 * resumes a copy of that cluster instead of running initdb itself (src/pglite-cluster.ts).
 */
export default async function setup(): Promise<() => Promise<void>> {
  // Escape hatch for a caller that has just built (turbo's test-after-build, scripts/demo.mjs).
  if (process.env.SVC_E2E_NO_BUILD !== '1') {
    const cwd = resolve(import.meta.dirname, '..', '..');
    const r = spawnSync('pnpm', ['exec', 'tsc', '-b'], { cwd, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`building apps/e2e and its references failed (tsc -b exit ${r.status}):\n${r.stdout}${r.stderr}`);
  }
  // after the build: the server's initdb child is apps/server/dist/store/pglite-init.js
  const dir = await mkdtemp(join(tmpdir(), 'svc-e2e-cluster-'));
  await makePgliteCluster(join(dir, 'db'));
  // the test files' workers start after this and inherit the environment
  process.env[PGLITE_CLUSTER_ENV] = join(dir, 'db');
  return () => rm(dir, { recursive: true, force: true });
}
