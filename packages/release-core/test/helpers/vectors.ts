import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isReleaseError, type ReleaseErrorCode } from '../../src/index.js';

export const vectorsDir = join(import.meta.dirname, '..', '..', 'vectors');

export function loadVector<T = any>(file: string): T {
  return JSON.parse(readFileSync(join(vectorsDir, file), 'utf8')) as T;
}

/** The ReleaseError thrown by fn (fails the test when fn succeeds or throws something else). */
export function refusal(fn: () => unknown): { code: ReleaseErrorCode; message: string; issues: readonly { path: string; message: string }[] } {
  try {
    fn();
  } catch (e) {
    if (isReleaseError(e)) return e;
    throw e;
  }
  throw new Error('expected a refusal, but it was accepted');
}
