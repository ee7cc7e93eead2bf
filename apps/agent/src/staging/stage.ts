import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rename, rm, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentError, isAgentError } from '../errors.js';
import { digestFromHex, type Digest } from '@svc/release-core';
import type { MemberSpec } from '../drivers/driver.js';
import { fsyncDir } from '../journal/io.js';
import type { TargetFetcher } from './fetcher.js';
import { resumable, type ProgressStore } from './resume.js';
import type { DownloadProgress } from '../journal/tx-data.js';

export interface DownloadOptions {
  fetcher: TargetFetcher;
  /** Per-transaction staging directory. */
  dir: string;
  /** Bytes to keep free beyond the download itself. */
  reserveBytes?: number;
  /** Test seam for the free-space check. */
  freeBytes?: (dir: string) => Promise<number>;
  /** Journaled progress and the retry bound (staging/resume.ts); without it one attempt from the file's size. */
  progress?: ProgressStore;
}

async function sizeOf(path: string): Promise<number | null> {
  try {
    return (await stat(path)).size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

async function digestOf(path: string): Promise<Digest> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return digestFromHex(hash.digest('hex'));
}

export async function freeBytesOf(dir: string): Promise<number> {
  const s = await statfs(dir);
  return Number(s.bavail) * Number(s.bsize);
}

/** The verified file of a member, once downloaded. */
export function stagedPath(dir: string, member: MemberSpec): string {
  return join(dir, `${member.component}.staged`);
}

/**
 * Downloads one member into `<dir>/<component>.part`, resuming from its journaled offset
 * (`opts.progress`; without it from the file's size) and retrying within the bound, then
 * checks length and digest and renames it to `.staged`. Calling it again after success is a
 * no-op; after a crash it continues where the journal says the partial file ends. Resolves
 * with the download's progress (null when the member was already staged).
 */
export async function downloadMember(member: MemberSpec, opts: DownloadOptions): Promise<{ file: string; progress: DownloadProgress | null }> {
  await mkdir(opts.dir, { recursive: true });
  const done = stagedPath(opts.dir, member);
  if ((await sizeOf(done)) === member.length && (await digestOf(done)) === member.digest) return { file: done, progress: null };
  const part = join(opts.dir, `${member.component}.part`);
  let offset = (await sizeOf(part)) ?? 0;
  if (offset > member.length) {
    await rm(part, { force: true });
    offset = 0;
  }
  const kept = opts.progress?.load('full');
  if (kept !== undefined) offset = Math.min(offset, kept.offset);
  else if (opts.progress !== undefined) offset = 0;
  const needed = member.length - offset + (opts.reserveBytes ?? 16 * 1024 * 1024);
  const free = await (opts.freeBytes ?? freeBytesOf)(opts.dir);
  if (free < needed) {
    throw new AgentError('DISK_SPACE_LOW', `${member.component} needs ${needed} bytes free in ${opts.dir}, ${free} available`, {
      field: member.component,
    });
  }
  let progress: DownloadProgress | null = null;
  if (offset < member.length) {
    try {
      const expected = { digest: member.digest, length: member.length };
      ({ progress } = await resumable(
        part,
        'full',
        opts.progress,
        (from, p) => opts.fetcher.fetchTarget(member.target, expected, part, from, p),
        member.component,
      ));
    } catch (cause) {
      if (isAgentError(cause, 'DIGEST_MISMATCH')) {
        // The fetcher found bytes that differ from the signed metadata: never kept, never resumed from.
        await rm(part, { force: true });
        throw new AgentError('DIGEST_MISMATCH', `${member.component}: ${cause.message}`, { cause, field: `components.${member.component}.digest` });
      }
      if (cause instanceof AgentError) throw cause;
      throw new AgentError('FETCH_FAILED', `fetching ${member.target} for ${member.component} failed: ${(cause as Error).message}`, {
        cause,
        field: member.component,
      });
    }
  }
  const size = await sizeOf(part);
  const digest = size === member.length ? await digestOf(part) : null;
  if (digest !== member.digest) {
    // Bytes that do not match the signed release are never kept, never resumed from.
    await rm(part, { force: true });
    throw new AgentError(
      'DIGEST_MISMATCH',
      `${member.component}: downloaded ${size ?? 0} bytes with ${digest ?? 'wrong length'}, signed ${member.length} bytes ${member.digest}`,
      { field: `components.${member.component}.digest` },
    );
  }
  await rename(part, done);
  await fsyncDir(opts.dir);
  return { file: done, progress };
}
