import type { Digest } from '@svc/release-core';

/**
 * How target bytes reach the device. The channel implements it with tuf-js (refresh, then
 * fetch the target by path, checking TUF's length and hashes). It appends to `destFile`
 * starting at byte `resumeFrom` (the bytes before it are already there from an earlier
 * attempt) and resolves when the file holds `length` bytes.
 */
export interface TargetFetcher {
  fetchTarget(path: string, expected: { digest: Digest; length: number }, destFile: string, resumeFrom: number): Promise<void>;
  /**
   * The delta from `source` to `target` (docs/delta-updates.md) into `destFile`, when the
   * signed TUF targets list one at deltaTargetPath whose `custom.delta` names exactly these two
   * members: resolves with its length once the bytes matched TUF's length and sha256 (a
   * tampered delta is DIGEST_MISMATCH, never handed on), or null when none is offered.
   */
  fetchDelta?(pair: { source: Digest; target: Digest }, destFile: string): Promise<{ length: number } | null>;
}
