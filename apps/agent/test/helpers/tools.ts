import { tempDir as tempDirOf } from '@svc/test-kit';

export { requireTool } from '../../../../vitest.shared.js';

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const { dir, cleanup } = await tempDirOf('agent');
  try {
    return await fn(dir);
  } finally {
    await cleanup();
  }
}

/** A temp dir for one test and its removal. */
export const tempDir = (): ReturnType<typeof tempDirOf> => tempDirOf('agent');
