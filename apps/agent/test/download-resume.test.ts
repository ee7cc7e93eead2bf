import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deltaTargetPath, sha256Digest, type Digest } from '@svc/release-core';
import { requireTool } from '../../../vitest.shared.js';
import {
  AgentError,
  downloadBackoffMs,
  downloadMember,
  DOWNLOAD,
  type FetchProgress,
  type MemberSpec,
  type ProgressStore,
  type TargetFetcher,
} from '../src/index.js';
import type { DownloadProgress, DownloadTarget } from '../src/journal/tx-data.js';
import { deliverMember } from '../src/staging/delta.js';
import { tempDir } from './helpers/tools.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

const bytes = randomBytes(64 * 1024);
const m: MemberSpec = {
  component: 'blob',
  kind: 'model',
  rolloutId: 'r',
  target: 'blobs/b',
  digest: sha256Digest(bytes),
  length: bytes.length,
  mediaType: 'x',
};

/** The journal's part, in memory: what was saved, in order, and the waits asked for. */
function memoryStore(maxStalled = 3): ProgressStore & { saved: DownloadProgress[]; waits: number[] } {
  const saved: DownloadProgress[] = [];
  const waits: number[] = [];
  return {
    saved,
    waits,
    maxStalled,
    load: (target: DownloadTarget) => saved.filter((p) => p.target === target).at(-1),
    save: async (p) => void saved.push(p),
    backoffMs: (stalled) => stalled,
    sleep: async (ms) => void waits.push(ms),
  };
}

/**
 * Streams `source` like the channel's fetcher: from `resumeFrom`, checkpointing where it stops.
 * Each call takes the next plan entry: a number of bytes after which the "link" drops (null:
 * to the end; 0: the link is down before any byte arrives).
 */
class FlakyLink implements TargetFetcher {
  readonly calls: number[] = [];
  constructor(
    private readonly source: Buffer,
    private readonly plan: (number | null)[],
  ) {}

  async stream(destFile: string, resumeFrom: number, progress?: FetchProgress): Promise<void> {
    this.calls.push(resumeFrom);
    const cutAfter = this.plan.shift() ?? null;
    if (cutAfter === 0) throw new Error('14 UNAVAILABLE: connection refused');
    if (resumeFrom === 0) await writeFile(destFile, '');
    const end = cutAfter === null ? this.source.length : Math.min(this.source.length, resumeFrom + cutAfter);
    await appendFile(destFile, this.source.subarray(resumeFrom, end));
    if (end < this.source.length) {
      await progress?.checkpoint(end);
      throw new Error('14 UNAVAILABLE: Connection dropped');
    }
  }

  async fetchTarget(_path: string, _e: { digest: Digest; length: number }, destFile: string, resumeFrom: number, progress?: FetchProgress): Promise<void> {
    await this.stream(destFile, resumeFrom, progress);
  }
}

describe('resumed downloads', () => {
  it('a dropped link: the next attempt asks for the rest, every byte arrives once', async () => {
    const link = new FlakyLink(bytes, [20_000, 0, 30_000, null]);
    const store = memoryStore();
    const { file, progress } = await downloadMember(m, { fetcher: link, dir, progress: store });
    expect(Buffer.from(await readFile(file)).equals(bytes)).toBe(true);
    expect(link.calls).toEqual([0, 20_000, 20_000, 50_000]);
    expect(progress).toMatchObject({ target: 'full', offset: bytes.length, attempts: 4, resumes: 3, received: bytes.length, stalled: 0 });
    // one attempt without progress: one wait, then progress cleared the count
    expect(store.waits).toEqual([0, 1, 0]);
    expect(store.saved.some((p) => p.last_error?.includes('connection refused'))).toBe(true);
  });

  it('a link that stays down: DOWNLOAD_RETRIES_EXHAUSTED after the bound of attempts in a row without progress, the kept offset named', async () => {
    const link = new FlakyLink(bytes, [10_000, 0, 0, 0, 0, 0]);
    const store = memoryStore(3);
    await expect(downloadMember(m, { fetcher: link, dir, progress: store })).rejects.toMatchObject({
      code: 'DOWNLOAD_RETRIES_EXHAUSTED',
      field: 'blob',
      message: expect.stringContaining('3 attempts in a row without progress (bound 3), 10000 bytes kept; last: 14 UNAVAILABLE: connection refused'),
    });
    expect(link.calls).toEqual([0, 10_000, 10_000, 10_000]);
    expect(store.saved.at(-1)).toMatchObject({ offset: 10_000, attempts: 4, stalled: 3, resumes: 3, received: 10_000 });
    // what arrived stays on disk, as durable as the journal says
    expect((await stat(join(dir, 'blob.part'))).size).toBe(10_000);
  });

  it('a restart continues from the journaled offset: bytes past it (not known to be fsynced) are cut off and fetched again', async () => {
    // the journal says 16 KiB are durable; the file holds 40 KiB, of which the tail may be garbage after a power cut
    const part = join(dir, 'blob.part');
    const torn = Buffer.concat([bytes.subarray(0, 16_384), Buffer.alloc(40_000 - 16_384)]);
    const { mkdir } = await import('node:fs/promises');
    await mkdir(dir, { recursive: true });
    await writeFile(part, torn);
    const store = memoryStore();
    store.saved.push({ target: 'full', offset: 16_384, attempts: 1, stalled: 0, resumes: 0, received: 16_384 });
    const link = new FlakyLink(bytes, [null]);
    const { file, progress } = await downloadMember(m, { fetcher: link, dir, progress: store });
    expect(link.calls).toEqual([16_384]);
    expect(Buffer.from(await readFile(file)).equals(bytes)).toBe(true);
    expect(progress).toMatchObject({ attempts: 2, resumes: 1, received: bytes.length });
  });

  it('bytes that differ from the signed metadata are never retried: DIGEST_MISMATCH at once', async () => {
    const store = memoryStore();
    const calls: number[] = [];
    const tampering: TargetFetcher = {
      async fetchTarget(path, _e, destFile, from) {
        calls.push(from);
        await writeFile(destFile, bytes.subarray(0, 10));
        throw new AgentError('DIGEST_MISMATCH', `target ${path}: bytes do not match the TUF targets metadata`, { field: path });
      },
    };
    await expect(downloadMember(m, { fetcher: tampering, dir, progress: store })).rejects.toMatchObject({ code: 'DIGEST_MISMATCH' });
    expect(calls).toEqual([0]);
  });

  it('a local file error (errno) is not the link: left to the transaction at once, not retried here', async () => {
    const store = memoryStore();
    let calls = 0;
    const full: TargetFetcher = {
      async fetchTarget() {
        calls++;
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      },
    };
    await expect(downloadMember(m, { fetcher: full, dir, progress: store })).rejects.toMatchObject({
      code: 'FETCH_FAILED',
      message: expect.stringContaining('ENOSPC'),
    });
    expect(calls).toBe(1);
  });

  it('backs off from the base, doubling per attempt without progress, up to the cap', () => {
    expect(downloadBackoffMs(1, () => 0)).toBe(DOWNLOAD.backoffBaseMs / 2);
    expect(downloadBackoffMs(2, () => 0.999999)).toBe(2 * DOWNLOAD.backoffBaseMs);
    expect(downloadBackoffMs(40, () => 0.999999)).toBe(DOWNLOAD.backoffMaxMs);
  });
});

const haveZstd = requireTool('zstd');

describe.skipIf(!haveZstd)('a delta download resumes the same way', () => {
  it('the delta stream drops: the next attempt continues it, the member is rebuilt from it', async () => {
    const old = randomBytes(512 * 1024);
    const neu = Buffer.from(old);
    for (const at of [3, 60]) randomBytes(4096).copy(neu, at * 4096);
    const live = join(dir, 'live');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(dir, { recursive: true });
    await writeFile(live, old);
    await writeFile(join(dir, 'neu'), neu);
    execFileSync('zstd', ['-q', '-f', '-T1', '-3', '--long=20', `--patch-from=${live}`, join(dir, 'neu'), '-o', join(dir, 'made.zst')]);
    const delta = await readFile(join(dir, 'made.zst'));
    const member: MemberSpec = { ...m, component: 'weights', target: 'models/w', digest: sha256Digest(neu), length: neu.length };
    const pair = { source: sha256Digest(old), target: member.digest };
    const deltaLink = new FlakyLink(delta, [Math.floor(delta.length / 3), null]);
    const fetcher: TargetFetcher = {
      fetchTarget: () => Promise.reject(new Error('the full member must not be fetched')),
      async fetchDelta(p, destFile, resumeFrom = 0, progress) {
        if (deltaTargetPath(p.source, p.target) !== deltaTargetPath(pair.source, pair.target)) return null;
        await deltaLink.stream(destFile, resumeFrom, progress);
        return { length: delta.length };
      },
    };
    const store = memoryStore();
    const d = await deliverMember(member, { fetcher, dir: join(dir, 'staging'), source: { digest: pair.source, path: live }, progress: store });
    expect(deltaLink.calls).toEqual([0, Math.floor(delta.length / 3)]);
    expect(d).toEqual({
      component: 'weights',
      method: 'delta',
      bytes_transferred: delta.length,
      full_length: neu.length,
      source_digest: pair.source,
      attempts: 2,
      resumes: 1,
    });
    expect((await readFile(join(dir, 'staging', 'weights.staged'))).equals(neu)).toBe(true);
    expect(store.saved.every((p) => p.target === 'delta')).toBe(true);
  });
});
