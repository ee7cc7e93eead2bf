import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentError, downloadMember, freeBytesOf, type MemberSpec, type TargetFetcher } from '../src/index.js';
import { MemoryFetcher, sha } from './helpers/release-fixture.js';
import { tempDir } from './helpers/tools.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

const bytes = new TextEncoder().encode('0123456789abcdef'.repeat(64));
const m: MemberSpec = { component: 'blob', kind: 'model', rolloutId: 'r', target: 'blobs/b', digest: sha(bytes), length: bytes.length, mediaType: 'x' };

describe('download and stage', () => {
  it('resumes from a partial file at its offset and verifies the digest', async () => {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'blob.part'), bytes.subarray(0, 700));
    const f = new MemoryFetcher(new Map([['blobs/b', bytes]]));
    const { file, progress } = await downloadMember(m, { fetcher: f, dir });
    expect(progress).toMatchObject({ offset: bytes.length, attempts: 1, resumes: 1, received: bytes.length - 700 });
    expect(f.calls).toEqual([{ path: 'blobs/b', resumeFrom: 700 }]);
    expect(Buffer.from(await readFile(file)).equals(Buffer.from(bytes))).toBe(true);
    // again: already staged, no fetch
    await downloadMember(m, { fetcher: f, dir });
    expect(f.calls).toHaveLength(1);
  });

  it('checks free space with statfs before downloading', async () => {
    expect(await freeBytesOf(dir)).toBeGreaterThan(0);
    const f = new MemoryFetcher(new Map([['blobs/b', bytes]]));
    await expect(downloadMember(m, { fetcher: f, dir, freeBytes: async () => 100 })).rejects.toMatchObject({ code: 'DISK_SPACE_LOW', field: 'blob' });
    expect(f.calls).toEqual([]);
  });

  it('discards bytes that do not match the signed digest; a fetch error is FETCH_FAILED', async () => {
    const evil = new TextEncoder().encode('x'.repeat(bytes.length));
    await expect(downloadMember(m, { fetcher: new MemoryFetcher(new Map([['blobs/b', evil]])), dir })).rejects.toMatchObject({ code: 'DIGEST_MISMATCH' });
    await expect(readFile(join(dir, 'blob.part'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(downloadMember(m, { fetcher: new MemoryFetcher(new Map()), dir })).rejects.toMatchObject({ code: 'FETCH_FAILED' });
  });

  it('a fetcher that finds bytes differing from the signed metadata: the member is named and the partial file dropped', async () => {
    const tampering: TargetFetcher = {
      async fetchTarget(path, _expected, destFile) {
        await writeFile(destFile, bytes.subarray(0, 100));
        throw new AgentError('DIGEST_MISMATCH', `target ${path}: bytes do not match the TUF targets metadata`, { field: path });
      },
    };
    await expect(downloadMember(m, { fetcher: tampering, dir })).rejects.toMatchObject({
      code: 'DIGEST_MISMATCH',
      field: 'components.blob.digest',
      message: 'blob: target blobs/b: bytes do not match the TUF targets metadata',
    });
    await expect(readFile(join(dir, 'blob.part'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
