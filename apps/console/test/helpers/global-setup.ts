import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makePgliteCluster, PGLITE_CLUSTER_ENV } from '@svc/e2e';

/**
 * Runs the server's initdb once: every server a test file starts (helpers/server.ts, the e2e
 * harness's Fleet) resumes a copy of this cluster instead of running initdb on its first start
 * (about 12 s of CPU each; @svc/e2e src/pglite-cluster.ts).
 */
export default async function setup(): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-console-cluster-'));
  await makePgliteCluster(join(dir, 'db'));
  // the test files' workers start after this and inherit the environment
  process.env[PGLITE_CLUSTER_ENV] = join(dir, 'db');
  return () => rm(dir, { recursive: true, force: true });
}
