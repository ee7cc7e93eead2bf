import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startPglite } from '../../src/store/open.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A freshly initialised PGlite cluster (`dumpDataDir`), which every test file's PGlite starts from. */
    pgliteImage: string;
    /** The same cluster as a directory, copied into the data dir of a process a test starts (helpers/store.ts `seedPgliteCluster`). */
    pgliteCluster: string;
  }
}

/**
 * Runs initdb once for the whole run: one PGlite cluster is made here, in a directory, the
 * way the server makes its own (`startPglite`: initdb in a child process). Each test file's
 * PGlite (helpers/store.ts `filePglite`) loads its dump instead of running initdb itself
 * (about a second instead of three to four, in every one of the package's files), and a data
 * directory a test hands to `node dist/main.js` or a child process starts as a copy of it
 * (`seedPgliteCluster`): an initdb costs about 12 s of CPU, a copy a fraction of a second.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-pglite-image-'));
  const cluster = join(dir, 'cluster');
  const pglite = await startPglite(cluster);
  const image = await pglite.dumpDataDir('none');
  await pglite.close();
  const file = join(dir, 'cluster.tar');
  await writeFile(file, Buffer.from(await image.arrayBuffer()));
  project.provide('pgliteImage', file);
  project.provide('pgliteCluster', cluster);
  return () => rm(dir, { recursive: true, force: true });
}
