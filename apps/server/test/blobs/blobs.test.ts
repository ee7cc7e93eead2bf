import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Digest } from '@svc/release-core';
import { BlobError, FsBlobStore, parseRangeHeader, assertBlobDigest } from '../../src/blobs/index.js';
import { readAll } from '../fixtures/signing-repo.js';

function sha(buf: Buffer): Digest {
  return `sha256:${createHash('sha256').update(buf).digest('hex')}`;
}

async function expectBlobError(p: Promise<unknown>, code: string): Promise<BlobError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(BlobError);
  expect((e as BlobError).code).toBe(code);
  return e as BlobError;
}

describe('FsBlobStore', () => {
  let dir: string;
  let blobs: FsBlobStore;
  const payload = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-blobs-'));
    blobs = new FsBlobStore(dir);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('streams a put to sha256/<hex>, read-only, with no temp file left', async () => {
    const info = await blobs.put(Readable.from([payload.subarray(0, 1000), payload.subarray(1000)]));
    expect(info).toEqual({ digest: sha(payload), length: payload.length });
    const path = join(dir, 'sha256', info.digest.slice(7));
    expect(blobs.pathOf(info.digest)).toBe(path);
    expect((await stat(path)).mode & 0o777).toBe(0o444);
    expect(await readdir(join(dir, 'tmp'))).toEqual([]);
    expect(await blobs.has(info.digest)).toBe(true);
    expect(await blobs.stat(info.digest)).toEqual(info);
  });

  it('deduplicates identical content', async () => {
    const a = await blobs.put(Readable.from([payload]));
    const b = await blobs.put(Readable.from([payload]));
    expect(a).toEqual(b);
    expect((await readdir(join(dir, 'sha256'))).filter((n) => n === a.digest.slice(7))).toHaveLength(1);
  });

  it('refuses an upload over maxBytes and stores nothing', async () => {
    const big = Buffer.alloc(5000, 7);
    await expectBlobError(blobs.put(Readable.from([big]), { maxBytes: 4096 }), 'BLOB_TOO_LARGE');
    expect(await blobs.has(sha(big))).toBe(false);
    expect(await readdir(join(dir, 'tmp'))).toEqual([]);
  });

  it('refuses bytes that do not hash to the expected digest', async () => {
    const bytes = Buffer.from('hello');
    const e = await expectBlobError(blobs.put(Readable.from([bytes]), { expectedDigest: sha(Buffer.from('other')) }), 'BLOB_DIGEST_MISMATCH');
    expect(e.message).toContain(sha(bytes));
    expect(await blobs.has(sha(bytes))).toBe(false);
  });

  it('cleans up when the source stream fails midway', async () => {
    async function* failing() {
      yield Buffer.from('partial data');
      throw new Error('client went away');
    }
    await expectBlobError(blobs.put(failing()), 'BLOB_WRITE_FAILED');
    expect(await blobs.has(sha(Buffer.from('partial data')))).toBe(false);
    expect(await readdir(join(dir, 'tmp'))).toEqual([]);
  });

  it('a source stream that failed before the put began is a BLOB_WRITE_FAILED, not an unhandled error event', async () => {
    // a new store: its first put still makes the directories, the moment the error arrives
    const fresh = new FsBlobStore(join(dir, 'fresh'));
    const gone = new Readable({ read() {} });
    gone.destroy(new Error('client went away'));
    await expectBlobError(fresh.put(gone), 'BLOB_WRITE_FAILED');
    expect(await readdir(join(dir, 'fresh', 'tmp'))).toEqual([]);
  });

  it('reads whole blobs and byte ranges', async () => {
    const { digest } = await blobs.put(Readable.from([payload]));
    const whole = await blobs.get(digest);
    expect(whole.totalLength).toBe(payload.length);
    expect((await readAll(whole.stream)).equals(payload)).toBe(true);

    const mid = await blobs.get(digest, { kind: 'from-to', start: 10, end: 19 });
    expect(mid.range).toEqual({ start: 10, end: 19 });
    expect((await readAll(mid.stream)).equals(payload.subarray(10, 20))).toBe(true);

    const tail = await blobs.get(digest, { kind: 'suffix', length: 5 });
    expect((await readAll(tail.stream)).equals(payload.subarray(payload.length - 5))).toBe(true);

    const from = await blobs.get(digest, { kind: 'from', start: payload.length - 3 });
    expect((await readAll(from.stream)).length).toBe(3);

    // An end past the file is clamped (RFC 9110), a start past it is unsatisfiable.
    const clamped = await blobs.get(digest, { kind: 'from-to', start: payload.length - 2, end: payload.length + 100 });
    expect(clamped.range).toEqual({ start: payload.length - 2, end: payload.length - 1 });
    await expectBlobError(blobs.get(digest, { kind: 'from', start: payload.length }), 'BLOB_RANGE_INVALID');
  });

  it('reports missing blobs', async () => {
    const missing = sha(Buffer.from('never stored'));
    await expectBlobError(blobs.get(missing), 'BLOB_NOT_FOUND');
    expect(await blobs.stat(missing)).toBeUndefined();
    expect(await blobs.has(missing)).toBe(false);
  });

  it('refuses malformed digests, naming the field', () => {
    for (const bad of ['sha256:ABC', 'sha512:' + 'a'.repeat(64), 'a'.repeat(64), 'sha256:' + 'a'.repeat(63), 42]) {
      expect(() => assertBlobDigest(bad, 'artifact.digest')).toThrow(/artifact\.digest must be "sha256:"/);
    }
    expect(() => blobs.pathOf('sha256:../../etc/passwd')).toThrow(BlobError);
  });
});

describe('parseRangeHeader', () => {
  it.each([
    ['bytes=0-99', { kind: 'from-to', start: 0, end: 99 }],
    ['bytes=100-', { kind: 'from', start: 100 }],
    ['bytes=-50', { kind: 'suffix', length: 50 }],
  ])('parses %s', (header, expected) => {
    expect(parseRangeHeader(header)).toEqual(expected);
  });

  it.each(['bytes=5-1', 'bytes=-', 'bytes=0-1,5-6', 'items=0-1', 'bytes=a-b', 'bytes 0-1'])('refuses %s', (header) => {
    expect(() => parseRangeHeader(header)).toThrow(expect.objectContaining({ code: 'BLOB_RANGE_INVALID' }));
  });

  it('returns undefined without a header', () => {
    expect(parseRangeHeader(undefined)).toBeUndefined();
  });
});
