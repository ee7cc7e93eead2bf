import { spawn } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './paths.js';

/**
 * Names a directory holding an initialised embedded database cluster (set by the test
 * packages' global setups, `makePgliteCluster`). When it is set, `startServer` on the embedded
 * database copies it into `<SVC_DATA_DIR>/db` first, so the server resumes that cluster instead
 * of running initdb on its first start (about 12 s of CPU each; a copy takes a fraction of a
 * second). `pnpm demo` leaves it unset: its server makes its own cluster, as a first start does.
 */
export const PGLITE_CLUSTER_ENV = 'SVC_E2E_PGLITE_CLUSTER';

/** The server's own initdb (what its first start runs in a child process). */
const PGLITE_INIT = resolve(REPO_ROOT, 'apps/server/dist/store/pglite-init.js');

/** Initialises an embedded database cluster in `dir` with the server's own initdb child. */
export async function makePgliteCluster(dir: string): Promise<void> {
  const child = spawn(process.execPath, [PGLITE_INIT, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-2000)));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`initdb of the test cluster ${dir} failed (exit ${code}): ${stderr.trim()}`);
}

/** Copies the cluster `PGLITE_CLUSTER_ENV` names into `<dataDir>/db` when it is set and that holds none yet. */
export async function seedPgliteCluster(dataDir: string): Promise<void> {
  const cluster = process.env[PGLITE_CLUSTER_ENV];
  if (cluster === undefined || cluster === '' || existsSync(join(dataDir, 'db'))) return;
  await mkdir(dataDir, { recursive: true });
  // the synchronous copy: about a third of the CPU of fs.promises.cp on its ~1000 small files
  cpSync(cluster, join(dataDir, 'db'), { recursive: true, errorOnExist: true, force: false });
}
