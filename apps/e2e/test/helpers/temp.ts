import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temp dir for one test file, removed afterwards. */
export async function tempRoot(tag: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `svc-e2e-${tag}-`));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
