import type { Digest } from '@svc/release-core';
import type { ColumnType } from 'kysely';
import type { GeneratedTimestamp, Int8, Int8Identity, Timestamp } from '../store/column-types.js';

/**
 * Tables of the PostgreSQL blob store (migration 0051_blobs), composed into the server's
 * `Database` by src/store/database.ts so the schema check covers them. The blob store itself
 * speaks SQL to them only in src/blobs/pg-blob-queries.ts.
 */
export interface BlobsTable {
  id: Int8Identity;
  /** Set when the row turns `stored`. */
  digest: ColumnType<Digest> | null;
  state: 'writing' | 'stored';
  length: ColumnType<string | number, number | undefined, number>;
  chunk_size: number;
  created_at: GeneratedTimestamp;
  stored_at: Timestamp | null;
  lease_until: Timestamp;
}

export interface BlobChunksTable {
  blob_id: Int8;
  idx: number;
  bytes: Uint8Array;
}

export interface BlobTables {
  blobs: BlobsTable;
  blob_chunks: BlobChunksTable;
}
