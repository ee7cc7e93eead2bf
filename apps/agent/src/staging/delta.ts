import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { deltaEligible, digestFromHex, zstdDeltaArgs, type DeltaFallback, type Digest, type MemberDelivery } from '@svc/release-core';
import type { MemberSpec } from '../drivers/driver.js';
import { runCommand } from '../drivers/run.js';
import { isAgentError } from '../errors.js';
import { fsyncDir } from '../journal/io.js';
import { resumable } from './resume.js';
import { downloadMember, freeBytesOf, stagedPath, type DownloadOptions } from './stage.js';

/** The live version of a member a delta may be applied to. */
export interface DeltaSource {
  /** What the journal recorded as live before the transaction (previous_digest). */
  digest: Digest;
  /** The live file. */
  path: string;
}

export interface DeliverOptions extends DownloadOptions {
  /** The live version, when the member's driver has one to rebuild from. */
  source?: DeltaSource | null;
  /** zstd(1) (Debian's `zstd` on the device image). */
  zstd?: string;
  /** Bound of one delta application. */
  applyTimeoutMs?: number;
  log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
}

async function sizeOf(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => 0,
  );
}

async function digestOf(path: string): Promise<Digest | null> {
  try {
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    return digestFromHex(hash.digest('hex'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** `attempts`/`resumes`: of the delta's download, when it was fetched. */
type DeltaAttempt = { attempts: number; resumes: number } & (
  { ok: true; bytes: number } | { ok: false; bytes: number; fallback?: DeltaFallback; reason?: string }
);

/**
 * Obtains one member's verified bytes in `<dir>/<component>.staged` (docs/delta-updates.md):
 * through the delta from the live version when the signed TUF targets offer one, else, or when
 * anything about the delta is wrong, by the full download. A delta is only a way to obtain
 * bytes: what it rebuilds is staged only when its length and digest are those the customer
 * signed, and a refused delta (TUF hashes), a live file that is no longer the recorded source,
 * a zstd failure or a wrong reconstruction all end in the full download, named in the delivery.
 */
export async function deliverMember(member: MemberSpec, opts: DeliverOptions): Promise<MemberDelivery> {
  await mkdir(opts.dir, { recursive: true });
  const base = { component: member.component, full_length: member.length };
  const src = opts.source;
  let tried: DeltaAttempt | undefined;
  if (src && src.digest !== member.digest && opts.fetcher.fetchDelta && deltaEligible(1, member.length)) {
    tried = await viaDelta(member, src, opts);
    if (tried.ok)
      return {
        ...base,
        method: 'delta',
        bytes_transferred: tried.bytes,
        source_digest: src.digest,
        attempts: Math.max(1, tried.attempts),
        resumes: tried.resumes,
      };
    if (tried.fallback)
      opts.log?.('warn', 'delta not used, downloading the full member', { component: member.component, fallback: tried.fallback, reason: tried.reason });
  }
  const { progress } = await downloadMember(member, opts);
  const fallback = tried !== undefined && !tried.ok && tried.fallback !== undefined ? { source_digest: src!.digest, fallback: tried.fallback } : {};
  const attempts = (tried?.attempts ?? 0) + (progress?.attempts ?? 0);
  return {
    ...base,
    method: 'full',
    bytes_transferred: (tried?.bytes ?? 0) + (progress?.received ?? 0),
    ...fallback,
    attempts: Math.max(1, attempts),
    resumes: (tried?.resumes ?? 0) + (progress?.resumes ?? 0),
  };
}

async function viaDelta(member: MemberSpec, src: DeltaSource, opts: DeliverOptions): Promise<DeltaAttempt> {
  const deltaFile = join(opts.dir, `${member.component}.delta`);
  const rebuilt = join(opts.dir, `${member.component}.rebuilt`);
  let counts = { attempts: 0, resumes: 0, received: 0 };
  const fail = async (fallback: DeltaFallback, reason: string): Promise<DeltaAttempt> => ({
    ok: false,
    bytes: Math.max(counts.received, await sizeOf(deltaFile)),
    attempts: counts.attempts,
    resumes: counts.resumes,
    fallback,
    reason,
  });
  let keep = false;
  try {
    // room for the rebuilt member beside the delta; without it the full download decides
    if ((await (opts.freeBytes ?? freeBytesOf)(opts.dir)) < member.length + (opts.reserveBytes ?? 16 * 1024 * 1024))
      return { ok: false, bytes: 0, attempts: 0, resumes: 0 };
    let got: { length: number } | null;
    try {
      // resumed like the full download: from the journaled offset, retried within the bound
      const pair = { source: src.digest, target: member.digest };
      const r = await resumable(deltaFile, 'delta', opts.progress, (from, p) => opts.fetcher.fetchDelta!(pair, deltaFile, from, p), member.component);
      got = r.result;
      counts = r.progress;
    } catch (e) {
      // a link that stays down, a journal that cannot be written: the transaction decides, and
      // a later attempt continues the delta from its journaled offset
      if (opts.progress !== undefined && (isAgentError(e, 'DOWNLOAD_RETRIES_EXHAUSTED') || isAgentError(e, 'JOURNAL_WRITE_FAILED'))) {
        keep = true;
        throw e;
      }
      // bytes that are not what the signed metadata lists are never applied
      return fail('delta-refused', isAgentError(e) ? e.message : String(e));
    }
    if (got === null) return { ok: false, bytes: 0, attempts: 0, resumes: 0 };
    // the source must still be exactly the version the delta was made from
    const live = await digestOf(src.path);
    if (live !== src.digest) return fail('source-changed', `${src.path} is ${live ?? 'missing'}, the delta needs ${src.digest}`);
    const r = await runCommand([opts.zstd ?? 'zstd', ...zstdDeltaArgs('apply', { source: src.path, input: deltaFile, output: rebuilt })], {
      timeoutMs: opts.applyTimeoutMs ?? 300_000,
    }).catch((e: unknown) => ({ code: null, signal: null, stdout: '', stderr: (e as Error).message, timedOut: false }));
    if (r.code !== 0) return fail('apply-failed', r.timedOut ? 'zstd timed out' : `zstd exited ${r.code ?? r.signal}: ${r.stderr.trim().slice(0, 200)}`);
    // the customer's signature covers the member, not the delta: check what was rebuilt
    const size = await sizeOf(rebuilt);
    const digest = size === member.length ? await digestOf(rebuilt) : null;
    if (digest !== member.digest) return fail('wrong-reconstruction', `rebuilt ${size} bytes ${digest ?? ''}, signed ${member.length} bytes ${member.digest}`);
    await rename(rebuilt, stagedPath(opts.dir, member));
    await fsyncDir(opts.dir);
    return { ok: true, bytes: counts.received, attempts: counts.attempts, resumes: counts.resumes };
  } finally {
    if (!keep) await rm(deltaFile, { force: true });
    await rm(rebuilt, { force: true });
  }
}
