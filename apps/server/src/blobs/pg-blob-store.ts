import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type pg from 'pg';
import { digestFromHex, type Digest } from '@svc/release-core';
import type { BlobInfo, BlobPutOptions, BlobReadResult, BlobStore } from './blob-store.js';
import { assertBlobDigest } from './digest.js';
import { BlobError } from './errors.js';
import { postgresPoolOf } from '../store/open.js';
import {
  beginUpload,
  completeUpload,
  dropUpload,
  findStored,
  insertChunk,
  insertChunksBinary,
  readChunkSlice,
  readChunkSliceBinary,
  readWholeChunksBinary,
  renewUpload,
  retainStored,
  type BlobDb,
} from './pg-blob-queries.js';
import { resolveRange, type ByteRange, type ByteRangeRequest } from './range.js';
import { SERVER_TUNING } from '../limits.js';

export interface PgBlobStoreOptions {
  /** Bytes per chunk row (default SERVER_TUNING.blobStore.chunkBytes); readers use each blob's own. */
  chunkBytes?: number;
  /** A stored blob's lease after a put or retain (default SERVER_TUNING.blobStore.graceMs). */
  graceMs?: number;
  /** An upload's lease while it writes (default SERVER_TUNING.blobStore.uploadLeaseMs). */
  uploadLeaseMs?: number;
  /** Read statements one get keeps under way (default SERVER_TUNING.blobStore.readsInFlight). */
  readsInFlight?: number;
  /** Whole chunks one get reads per statement (default SERVER_TUNING.blobStore.chunksPerRead). */
  chunksPerRead?: number;
  /** Chunks one put writes per statement (default SERVER_TUNING.blobStore.chunksPerWrite). */
  chunksPerWrite?: number;
  /** Write statements one put keeps under way (default SERVER_TUNING.blobStore.writesInFlight). */
  writesInFlight?: number;
  /**
   * The node-postgres pool chunks are written to and read from in COPY's binary format
   * (default: the pool under `db` on PostgreSQL); null inserts them one statement each and
   * reads them as base64 text through `db`, as on PGlite.
   */
  pool?: pg.Pool | null;
}

/**
 * BlobStore in the database (PostgreSQL, or PGlite when asked): every server process on
 * the database serves the same bytes, whatever its data directory holds (migration 0051,
 * docs/server.md "Blob store").
 *
 * put streams: each chunk is inserted as soon as it is full (a few inserts in flight while
 * the next chunk is read and hashed), under a `writing` row no reader sees; the row becomes the
 * blob of its digest only after the digest checked out, so a failed or refused upload leaves
 * nothing visible (its chunks are deleted, or collected once its lease lapses). Chunk inserts
 * commit without waiting for the WAL flush; the commit that makes the blob visible waits for it
 * (pg-blob-queries.ts insertChunk). get reads one chunk per statement, a few chunks ahead, on
 * whichever pooled connections are free: a slow download holds no connection between chunks.
 * On PostgreSQL a chunk arrives in COPY's binary format, on PGlite as base64 text.
 */
export class PgBlobStore implements BlobStore {
  readonly #db: BlobDb;
  readonly #chunkBytes: number;
  readonly #graceMs: number;
  readonly #leaseMs: number;
  readonly #readsInFlight: number;
  readonly #perRead: number;
  readonly #perWrite: number;
  readonly #writesInFlight: number;
  readonly #read: ChunkReader;
  readonly #readWhole: WholeChunksReader;
  readonly #insert: (id: string, firstIdx: number, chunks: readonly Buffer[]) => Promise<void>;

  constructor(db: BlobDb, options: PgBlobStoreOptions = {}) {
    this.#db = db;
    this.#chunkBytes = options.chunkBytes ?? SERVER_TUNING.blobStore.chunkBytes;
    this.#graceMs = options.graceMs ?? SERVER_TUNING.blobStore.graceMs;
    this.#leaseMs = options.uploadLeaseMs ?? SERVER_TUNING.blobStore.uploadLeaseMs;
    this.#readsInFlight = options.readsInFlight ?? SERVER_TUNING.blobStore.readsInFlight;
    this.#perRead = options.chunksPerRead ?? SERVER_TUNING.blobStore.chunksPerRead;
    this.#perWrite = options.chunksPerWrite ?? SERVER_TUNING.blobStore.chunksPerWrite;
    this.#writesInFlight = options.writesInFlight ?? SERVER_TUNING.blobStore.writesInFlight;
    const pool = options.pool === undefined ? postgresPoolOf(db) : options.pool;
    if (pool === undefined || pool === null) {
      this.#read = (id, idx, from, count) => readChunkSlice(db, id, idx, from, count);
      this.#readWhole = async (id, firstIdx, lastIdx, chunkSize) => {
        const chunks: Buffer[] = [];
        for (let idx = firstIdx; idx <= lastIdx; idx++) {
          const chunk = await readChunkSlice(db, id, idx, 0, chunkSize);
          if (chunk === undefined) break;
          chunks.push(chunk);
        }
        return chunks;
      };
      this.#insert = async (id, firstIdx, chunks) => {
        for (const [i, chunk] of chunks.entries()) await insertChunk(db, id, firstIdx + i, chunk);
      };
    } else {
      this.#read = (id, idx, from, count) => readChunkSliceBinary(pool, id, idx, from, count);
      this.#readWhole = (id, firstIdx, lastIdx) => readWholeChunksBinary(pool, id, firstIdx, lastIdx);
      this.#insert = (id, firstIdx, chunks) => insertChunksBinary(pool, id, firstIdx, chunks);
    }
  }

  async put(source: AsyncIterable<Uint8Array> | Readable, options: BlobPutOptions = {}): Promise<BlobInfo> {
    // a source that fails while the upload row is made keeps its error for the loop below
    if (source instanceof EventEmitter) source.on('error', () => undefined);
    const db = this.#db;
    const size = this.#chunkBytes;
    const maxBytes = options.maxBytes ?? Number.MAX_SAFE_INTEGER;
    let id: string | undefined;
    // write statements under way, oldest first: at most SERVER_TUNING.blobStore.writesInFlight
    const inFlight: Promise<void>[] = [];
    try {
      id = await beginUpload(db, size, this.#leaseMs);
      const uploadId = id;
      const hash = createHash('sha256');
      let length = 0;
      let index = 0;
      let renewedAt = Date.now();
      let parts: Buffer[] = [];
      let partsBytes = 0;
      // full chunks not yet sent, the first of them chunk `batchStart`
      let batch: Buffer[] = [];
      let batchStart = 0;
      // a few write statements in flight on pooled connections while the next chunks are read and hashed
      const flush = async () => {
        if (batch.length === 0) return;
        const chunks = batch;
        const firstIdx = batchStart;
        batch = [];
        batchStart = index;
        if (inFlight.length >= this.#writesInFlight) await inFlight.shift();
        if (Date.now() - renewedAt > this.#leaseMs / 3) {
          if (!(await renewUpload(db, uploadId, this.#leaseMs))) throw new Error('the upload lease lapsed');
          renewedAt = Date.now();
        }
        const insert = this.#insert(uploadId, firstIdx, chunks);
        // observed here too, so a failure while the source is read is never unhandled
        insert.catch(() => undefined);
        inFlight.push(insert);
      };
      const write = async (chunk: Buffer) => {
        batch.push(chunk);
        index++;
        if (batch.length >= this.#perWrite) await flush();
      };
      for await (const raw of source as AsyncIterable<Uint8Array | string>) {
        let chunk = typeof raw === 'string' ? Buffer.from(raw) : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
        length += chunk.byteLength;
        // bound untrusted uploads while streaming, not after
        if (length > maxBytes) throw new BlobError('BLOB_TOO_LARGE', `upload exceeds the limit of ${maxBytes} bytes`);
        hash.update(chunk);
        while (partsBytes + chunk.byteLength >= size) {
          const take = size - partsBytes;
          parts.push(chunk.subarray(0, take));
          await write(Buffer.concat(parts, size));
          chunk = chunk.subarray(take);
          parts = [];
          partsBytes = 0;
        }
        if (chunk.byteLength > 0) {
          // copied: a source may reuse its buffers once the loop asks for the next one
          parts.push(Buffer.from(chunk));
          partsBytes += chunk.byteLength;
        }
      }
      if (partsBytes > 0) await write(Buffer.concat(parts, partsBytes));
      await flush();
      await Promise.all(inFlight);
      const digest = digestFromHex(hash.digest('hex'));
      if (options.expectedDigest !== undefined && options.expectedDigest !== digest) {
        throw new BlobError('BLOB_DIGEST_MISMATCH', `upload hashed to ${digest}, expected ${options.expectedDigest}`);
      }
      // the same bytes stored meanwhile (or before): keep that blob, drop this copy
      for (let attempt = 0; attempt < 3; attempt++) {
        if ((await retainStored(db, digest, this.#graceMs)) !== undefined) {
          await dropUpload(db, uploadId);
          return { digest, length };
        }
        if (await completeUpload(db, uploadId, digest, length, this.#graceMs)) return { digest, length };
      }
      throw new Error(`${digest} was stored and collected again while this upload completed`);
    } catch (e) {
      await Promise.allSettled(inFlight);
      if (id !== undefined) await dropUpload(db, id).catch(() => undefined);
      if (e instanceof BlobError) throw e;
      throw new BlobError('BLOB_WRITE_FAILED', `storing the upload failed: ${(e as Error).message}`, { cause: e });
    }
  }

  async get(digest: Digest, range?: ByteRangeRequest): Promise<BlobReadResult> {
    const row = await findStored(this.#db, assertBlobDigest(digest));
    if (!row) throw new BlobError('BLOB_NOT_FOUND', `blob ${digest} does not exist`);
    const resolved = range === undefined ? undefined : resolveRange(range, row.length);
    const span = resolved ?? (row.length === 0 ? undefined : { start: 0, end: row.length - 1 });
    const chunks =
      span === undefined
        ? emptyChunks()
        : readChunks({ slice: this.#read, whole: this.#readWhole }, digest, row, span, { ahead: this.#readsInFlight, perRead: this.#perRead });
    return {
      stream: Readable.from(chunks, { objectMode: false, highWaterMark: row.chunkSize }),
      totalLength: row.length,
      ...(resolved ? { range: resolved } : {}),
    };
  }

  async stat(digest: Digest): Promise<BlobInfo | undefined> {
    const row = await findStored(this.#db, assertBlobDigest(digest));
    return row === undefined ? undefined : { digest, length: row.length };
  }

  async has(digest: Digest): Promise<boolean> {
    return (await this.stat(digest)) !== undefined;
  }

  async retain(digest: Digest): Promise<BlobInfo | undefined> {
    const length = await retainStored(this.#db, assertBlobDigest(digest), this.#graceMs);
    return length === undefined ? undefined : { digest, length };
  }
}

/** `count` bytes of chunk `idx` of blob row `id` from byte `from`; undefined when the chunk is gone. */
type ChunkReader = (id: string, idx: number, from: number, count: number) => Promise<Buffer | undefined>;

/** Whole chunks `firstIdx`..`lastIdx` of blob row `id` (of `chunkSize` bytes, the blob's last one shorter) in order; fewer when chunks are gone. */
type WholeChunksReader = (id: string, firstIdx: number, lastIdx: number, chunkSize: number) => Promise<Buffer[]>;

async function* emptyChunks(): AsyncGenerator<Buffer> {}

/**
 * The chunks covering `span`: whole chunks `perRead` to a statement, a chunk the span only
 * partly covers (its first or last) sliced by the database; up to `ahead` statements under way
 * while the chunks already read are yielded.
 */
async function* readChunks(
  read: { slice: ChunkReader; whole: WholeChunksReader },
  digest: Digest,
  row: { id: string; length: number; chunkSize: number },
  span: ByteRange,
  o: { ahead: number; perRead: number },
): AsyncGenerator<Buffer> {
  const { id, chunkSize } = row;
  const first = Math.floor(span.start / chunkSize);
  const last = Math.floor(span.end / chunkSize);
  const chunkLength = (idx: number) => Math.min(chunkSize, row.length - idx * chunkSize);
  const sliceOf = (idx: number) => {
    const from = idx === first ? span.start - idx * chunkSize : 0;
    const to = idx === last ? span.end - idx * chunkSize : chunkLength(idx) - 1;
    return { from, count: to - from + 1, whole: from === 0 && to === chunkLength(idx) - 1 };
  };
  const missing = (idx: number) => new BlobError('BLOB_NOT_FOUND', `blob ${digest}: chunk ${idx} is missing or short (deleted while it was read?)`);
  // one statement: chunk `idx` sliced, or whole chunks from `idx` on (at most perRead, up to the next partial one)
  const fetch = async (idx: number, end: number): Promise<Buffer[]> => {
    const s = sliceOf(idx);
    if (!s.whole) {
      const bytes = await read.slice(id, idx, s.from, s.count);
      if (bytes === undefined || bytes.byteLength !== s.count) throw missing(idx);
      return [bytes];
    }
    const chunks = await read.whole(id, idx, end, chunkSize);
    for (let i = 0; i <= end - idx; i++) if (chunks[i]?.byteLength !== chunkLength(idx + i)) throw missing(idx + i);
    if (chunks.length !== end - idx + 1) throw missing(end);
    return chunks;
  };
  const queue: Promise<Buffer[]>[] = [];
  let next = first;
  const fill = () => {
    while (next <= last && queue.length < o.ahead) {
      let end = next;
      if (sliceOf(next).whole) while (end < last && end - next + 1 < o.perRead && sliceOf(end + 1).whole) end++;
      const p = fetch(next, end);
      next = end + 1;
      // observed at once: a reader that stops early never leaves a rejection unhandled
      p.catch(() => undefined);
      queue.push(p);
    }
  };
  fill();
  while (queue.length > 0) {
    const chunks = await queue.shift()!;
    fill();
    for (const chunk of chunks) yield chunk;
  }
}
