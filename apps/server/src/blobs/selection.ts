import { join } from 'node:path';
import type { BlobStore } from './blob-store.js';
import { FsBlobStore } from './fs-blob-store.js';
import { PgBlobStore } from './pg-blob-store.js';
import type { BlobDb } from './pg-blob-queries.js';

export type BlobStoreKind = 'fs' | 'postgres';

/**
 * Which blob store a server uses (`SVC_BLOB_STORE`, docs/server.md "Blob store"): as set, or
 * the database when it is PostgreSQL (processes on several hosts share no directory) and the
 * data directory with the embedded database.
 */
export function blobStoreKind(configured: BlobStoreKind | undefined, databaseUrl: string | undefined): BlobStoreKind {
  return configured ?? (databaseUrl !== undefined ? 'postgres' : 'fs');
}

/**
 * The start-up warning for a selection that ties a PostgreSQL deployment to one host's disk
 * (`SVC_BLOB_STORE=fs` with `SVC_DATABASE_URL`: every server process would need the same
 * directory), or undefined.
 */
export function blobStoreWarning(kind: BlobStoreKind, databaseUrl: string | undefined): string | undefined {
  if (kind !== 'fs' || databaseUrl === undefined) return undefined;
  return 'blobs are on this host only (SVC_BLOB_STORE=fs with PostgreSQL): every other server process needs the same directory';
}

/** The blob store of that kind: `<dataDir>/blobs` or the database's `blobs` tables (migration 0051). */
export function openBlobStore(kind: BlobStoreKind, deps: { db: BlobDb; dataDir: string }): BlobStore {
  return kind === 'postgres' ? new PgBlobStore(deps.db) : new FsBlobStore(join(deps.dataDir, 'blobs'));
}
