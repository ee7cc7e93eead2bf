import { open, readFile, rename, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * The file operations the journal needs, as a seam: tests inject write faults (a failing
 * fsync, a torn write) here without touching the real disk code path.
 */
export interface JournalIo {
  /** Whole file, or null when it does not exist. */
  read(path: string): Promise<Uint8Array | null>;
  /** Append bytes and fsync before resolving. */
  append(path: string, bytes: Uint8Array): Promise<void>;
  /** Atomically replace the file: temp file, fsync, rename, fsync the directory. */
  replace(path: string, bytes: Uint8Array): Promise<void>;
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Write-to-temp + fsync + rename + fsync(dir): a reader sees the old or the new bytes, never half. */
export async function writeFileAtomic(path: string, bytes: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  const handle = await open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, path);
  await fsyncDir(dirname(path));
}

export const nodeJournalIo: JournalIo = {
  async read(path) {
    try {
      return await readFile(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  },
  async append(path, bytes) {
    await mkdir(dirname(path), { recursive: true });
    const handle = await open(path, 'a', 0o600);
    try {
      await handle.write(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  replace: writeFileAtomic,
};
