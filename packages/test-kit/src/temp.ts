import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory under the system temp dir (`svc-<tag>-XXXXXX`) and its removal. */
export async function tempDir(tag = 'test'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `svc-${tag}-`));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
