import { digestHex, isDigest, type Digest } from '../digest.js';
import { LIMITS } from '../limits.js';

/** The one delta format: a zstd frame made with `--patch-from` the source member (docs/delta-updates.md). */
export const DELTA_FORMAT = 'zstd-patch-from';

/** What a delta target's TUF `custom.delta` says: which signed member it rebuilds from which. */
export interface DeltaDescriptor {
  format: typeof DELTA_FORMAT;
  /** The member the device must already have, byte for byte. */
  source_digest: Digest;
  /** The member the delta rebuilds: the digest the customer signed in the release. */
  target_digest: Digest;
  target_length: number;
}

/**
 * The TUF target path of the delta from `source` to `target`: both digests in the path, so a
 * device finds the delta for what it runs without being told, and one delta serves every
 * rollout and release that moves a device between the same two members.
 */
export function deltaTargetPath(source: Digest, target: Digest): string {
  return `deltas/${digestHex(target)}/${digestHex(source)}.zst`;
}

/**
 * The delta descriptor of a verified TUF target's `custom`, or undefined when it does not name
 * exactly this source and target (a device never applies a delta made for other bytes).
 */
export function deltaDescriptorOf(custom: unknown, source: Digest, target: Digest): DeltaDescriptor | undefined {
  if (typeof custom !== 'object' || custom === null) return undefined;
  const d = (custom as { delta?: unknown }).delta;
  if (typeof d !== 'object' || d === null) return undefined;
  const o = d as Record<string, unknown>;
  if (o.format !== DELTA_FORMAT || !isDigest(o.source_digest) || !isDigest(o.target_digest)) return undefined;
  if (o.source_digest !== source || o.target_digest !== target) return undefined;
  if (typeof o.target_length !== 'number' || !Number.isSafeInteger(o.target_length) || o.target_length < 0) return undefined;
  return { format: DELTA_FORMAT, source_digest: o.source_digest, target_digest: o.target_digest, target_length: o.target_length };
}

/** Whether members of these sizes may be joined by a delta: both inside zstd's window (LIMITS.deltaMemberBytes). */
export function deltaEligible(sourceLength: number, targetLength: number): boolean {
  return sourceLength > 0 && targetLength > 0 && sourceLength <= LIMITS.deltaMemberBytes && targetLength <= LIMITS.deltaMemberBytes;
}

/**
 * log2 of the zstd window a delta between members of these sizes is made with: the smallest
 * power of two holding the larger one (the source is the window's prefix, and the decoder
 * allocates the window), at least 1 MiB, at most LIMITS.deltaWindowLog.
 */
export function deltaWindowLog(sourceLength: number, targetLength: number): number {
  const need = Math.ceil(Math.log2(Math.max(sourceLength, targetLength, 1)));
  return Math.min(Math.max(need, 20), LIMITS.deltaWindowLog);
}

/**
 * The zstd(1) argument vectors of both sides, so the server makes exactly the frames the
 * device can apply. Creating: `--long=W` with W from deltaWindowLog, one thread (`-T1`: one
 * core per build). Applying: `--long` and `--memory` at the shared maximum, so a frame that
 * asks for a larger window is refused by zstd instead of growing the device's memory; the
 * frame's own window (W) is what the decoder allocates.
 */
export function zstdDeltaArgs(
  mode: 'create' | 'apply',
  files: { source: string; input: string; output: string },
  sizes?: { sourceLength: number; targetLength: number },
  level: number = LIMITS.deltaZstdLevel,
): string[] {
  if (mode === 'apply') {
    return [
      '-q',
      '-f',
      '-d',
      `--long=${LIMITS.deltaWindowLog}`,
      `--memory=${LIMITS.deltaDecoderMemoryMiB}MB`,
      `--patch-from=${files.source}`,
      files.input,
      '-o',
      files.output,
    ];
  }
  const w = sizes === undefined ? LIMITS.deltaWindowLog : deltaWindowLog(sizes.sourceLength, sizes.targetLength);
  return ['-q', '-f', '-T1', `-${level}`, `--long=${w}`, `--patch-from=${files.source}`, files.input, '-o', files.output];
}
