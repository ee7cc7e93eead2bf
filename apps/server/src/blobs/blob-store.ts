import type { Readable } from 'node:stream';
import type { Digest } from '@svc/release-core';
import type { ByteRangeRequest, ByteRange } from './range.js';

/** What put/stat report about a stored blob. */
export interface BlobInfo {
  digest: Digest;
  length: number;
}

export interface BlobPutOptions {
  /** Byte cap for untrusted uploads; exceeding it is BLOB_TOO_LARGE and nothing is stored. */
  maxBytes?: number;
  /** When the caller already knows the digest, a mismatch is BLOB_DIGEST_MISMATCH and nothing is stored. */
  expectedDigest?: Digest;
}

export interface BlobReadResult {
  stream: Readable;
  /** Total length of the blob. */
  totalLength: number;
  /** The resolved range, when one was asked for. */
  range?: ByteRange;
}

/**
 * Content-addressed payload storage: the filesystem (FsBlobStore, the embedded default) or
 * chunks in the database (PgBlobStore, the default on PostgreSQL, where server processes on
 * several hosts share no directory). Rows of the service name blobs only by digest.
 *
 * Kept small on purpose so an S3-compatible store can implement it: put is
 * "upload to a temporary key while hashing, then copy/rename to the digest key",
 * get is a ranged GET, stat is a HEAD.
 */
export interface BlobStore {
  /** Streams `source` to storage while hashing; the blob becomes visible under its digest only when complete. */
  put(source: AsyncIterable<Uint8Array> | Readable, options?: BlobPutOptions): Promise<BlobInfo>;
  /** Opens a stored blob, optionally a byte range of it. BLOB_NOT_FOUND when absent. */
  get(digest: Digest, range?: ByteRangeRequest): Promise<BlobReadResult>;
  /** Length of a stored blob, or undefined when absent. */
  stat(digest: Digest): Promise<BlobInfo | undefined>;
  has(digest: Digest): Promise<boolean>;
  /**
   * stat for a caller about to commit a row naming a blob it did not put itself: a store that
   * collects garbage keeps the blob for its grace period from now (PgBlobStore), so it cannot
   * be collected before that row commits. undefined when absent.
   */
  retain(digest: Digest): Promise<BlobInfo | undefined>;
}
