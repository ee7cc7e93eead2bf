import type { Digest } from '@svc/release-core';

/** Told where a download's bytes are durable (staging/resume.ts journals it). */
export interface FetchProgress {
  /**
   * The first `at` bytes of the file are fsynced: called every DOWNLOAD.checkpointBytes and
   * once more where an interrupted stream stopped.
   */
  checkpoint(at: number): Promise<void>;
}

/**
 * How target bytes reach the device. The channel implements it with tuf-js (refresh, then
 * fetch the target by path, checking TUF's length and hashes). It writes `destFile` from byte
 * `resumeFrom` (the bytes before it are already there from an earlier attempt; anything after
 * them is overwritten) and resolves when the file holds `length` bytes.
 */
export interface TargetFetcher {
  fetchTarget(path: string, expected: { digest: Digest; length: number }, destFile: string, resumeFrom: number, progress?: FetchProgress): Promise<void>;
  /**
   * The delta from `source` to `target` (docs/delta-updates.md) into `destFile`, from byte
   * `resumeFrom` like fetchTarget, when the signed TUF targets list one at deltaTargetPath
   * whose `custom.delta` names exactly these two members: resolves with its length once the
   * bytes matched TUF's length and sha256 (a tampered delta is DIGEST_MISMATCH, never handed
   * on), or null when none is offered.
   */
  fetchDelta?(pair: { source: Digest; target: Digest }, destFile: string, resumeFrom?: number, progress?: FetchProgress): Promise<{ length: number } | null>;
}
