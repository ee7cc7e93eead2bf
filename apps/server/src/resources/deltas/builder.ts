import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { DELTA_FORMAT, deltaEligible, deltaTargetPath, digestFromHex, zstdDeltaArgs, type Digest } from '@svc/release-core';
import type { BlobStore } from '../../blobs/blob-store.js';
import type { TargetEntry } from '../../signing-repo/target-entry.js';
import { SERVER_TUNING } from '../../limits.js';

/** What a build needs: the blob store, a way to publish a TUF target, and the zstd binary. */
export interface DeltaBuildDeps {
  blobs: BlobStore;
  publish(tenant: string, entry: TargetEntry): Promise<void>;
  /** zstd(1); Debian's `zstd` package by default. */
  zstd?: string;
  /** Where work files go (default: the OS temp directory). */
  workDir?: string;
  timeoutMs?: number;
  memoryBytes?: number;
}

export interface DeltaToBuild {
  tenant_id: string;
  source_digest: Digest;
  target_digest: Digest;
  source_length: number;
  target_length: number;
}

export type BuildOutcome =
  | { state: 'ready'; targetPath: string; deltaDigest: Digest; deltaLength: number; buildMs: number; peakRssBytes: number | null }
  | { state: 'skipped' | 'failed'; error: string; buildMs: number; peakRssBytes: number | null };

/** A zstd run that failed, with why (exit status and its stderr, a timeout, the memory cap). */
class ZstdFailed extends Error {}

/**
 * Makes the delta from `source` to `target` (docs/delta-updates.md): both members from the blob
 * store into a private work directory, `zstd --patch-from` with the shared window rules
 * (release-core zstdDeltaArgs), bounded in time and peak memory, then the delta applied once
 * to the source here and the result compared with the target digest, so a delta that would not
 * rebuild the signed member is never published. A ready delta is stored as a blob and published
 * as a TUF target at deltaTargetPath, its own length and sha256 in the signed targets metadata
 * and the pair it joins in `custom.delta`.
 */
export async function buildDelta(deps: DeltaBuildDeps, d: DeltaToBuild): Promise<BuildOutcome> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  const peak = { bytes: null as number | null };
  const done = (state: 'skipped' | 'failed', error: string): BuildOutcome => ({ state, error, buildMs: ms(), peakRssBytes: peak.bytes });
  if (!deltaEligible(d.source_length, d.target_length)) return done('skipped', 'a member is larger than a delta window (LIMITS.deltaMemberBytes)');
  const [src, tgt] = [await deps.blobs.stat(d.source_digest), await deps.blobs.stat(d.target_digest)];
  if (!src) return done('skipped', `source ${d.source_digest} is not stored`);
  if (!tgt) return done('failed', `target ${d.target_digest} is not stored`);
  const dir = await mkdtemp(join(deps.workDir ?? tmpdir(), 'svc-delta-'));
  try {
    const files = { source: join(dir, 'source'), target: join(dir, 'target'), delta: join(dir, 'delta.zst'), check: join(dir, 'check') };
    await pipeline((await deps.blobs.get(d.source_digest)).stream, createWriteStream(files.source));
    await pipeline((await deps.blobs.get(d.target_digest)).stream, createWriteStream(files.target));
    const sizes = { sourceLength: src.length, targetLength: tgt.length };
    const run = (args: string[]) =>
      runZstd(deps.zstd ?? 'zstd', args, deps.timeoutMs ?? SERVER_TUNING.deltaBuildTimeoutMs, deps.memoryBytes ?? SERVER_TUNING.deltaBuildMemoryBytes, peak);
    try {
      await run(zstdDeltaArgs('create', { source: files.source, input: files.target, output: files.delta }, sizes));
    } catch (e) {
      if (e instanceof ZstdFailed) return done('failed', e.message);
      throw e;
    }
    const length = (await stat(files.delta)).size;
    if (length > SERVER_TUNING.deltaMaxRatio * tgt.length) {
      return done('skipped', `delta of ${length} bytes is over ${SERVER_TUNING.deltaMaxRatio * 100}% of the ${tgt.length}-byte member`);
    }
    try {
      await run(zstdDeltaArgs('apply', { source: files.source, input: files.delta, output: files.check }));
    } catch (e) {
      if (e instanceof ZstdFailed) return done('failed', `applying the new delta: ${e.message}`);
      throw e;
    }
    if ((await fileDigest(files.check)) !== d.target_digest) return done('failed', 'the delta does not rebuild the target member');
    const stored = await deps.blobs.put(createReadStream(files.delta));
    const targetPath = deltaTargetPath(d.source_digest, d.target_digest);
    await deps.publish(d.tenant_id, {
      path: targetPath,
      digest: stored.digest,
      length: stored.length,
      custom: {
        media_type: 'application/zstd',
        delta: { format: DELTA_FORMAT, source_digest: d.source_digest, target_digest: d.target_digest, target_length: tgt.length },
      },
    });
    return { state: 'ready', targetPath, deltaDigest: stored.digest, deltaLength: stored.length, buildMs: ms(), peakRssBytes: peak.bytes };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function fileDigest(path: string): Promise<Digest> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return digestFromHex(hash.digest('hex'));
}

/** The process's peak resident set (VmHWM) in bytes, or null where /proc does not tell. */
async function peakRss(pid: number): Promise<number | null> {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Runs zstd, sampling its peak resident memory every 50 ms: over `memoryBytes`, or past
 * `timeoutMs`, it is killed and the build fails (ZstdFailed). `peak` keeps the highest sample.
 */
function runZstd(bin: string, args: string[], timeoutMs: number, memoryBytes: number, peak: { bytes: number | null }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    let stopped: string | undefined;
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      if (stderr.length < 2000) stderr += s;
    });
    const stop = (why: string) => {
      stopped ??= why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop(`zstd ran longer than ${timeoutMs} ms`), timeoutMs);
    const sampler = setInterval(() => {
      if (child.pid === undefined) return;
      void peakRss(child.pid).then((b) => {
        if (b === null) return;
        peak.bytes = Math.max(peak.bytes ?? 0, b);
        if (b > memoryBytes) stop(`zstd used ${b} bytes of memory, over ${memoryBytes}`);
      });
    }, 50);
    child.on('error', (e) => {
      clearTimeout(timer);
      clearInterval(sampler);
      reject(new ZstdFailed(`zstd could not run: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearInterval(sampler);
      if (stopped !== undefined) reject(new ZstdFailed(stopped));
      else if (code !== 0) reject(new ZstdFailed(`zstd exited ${code ?? signal}: ${stderr.trim().slice(0, 300)}`));
      else resolve();
    });
  });
}
