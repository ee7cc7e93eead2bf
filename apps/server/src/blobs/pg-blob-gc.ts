import { deleteAbandonedUploads, deleteUnreferencedBlobs, type BlobDb } from './pg-blob-queries.js';
import { SERVER_TUNING } from '../limits.js';

export interface BlobGcResult {
  /** `writing` rows whose upload stopped renewing its lease (a writer that died or hung). */
  abandonedUploads: number;
  /** Stored blobs deleted: none named by a committed row, lease ended. */
  deleted: { digest: string; length: number }[];
}

/**
 * Mark and sweep over the database blob store (docs/server.md "Blob store"): a stored blob
 * goes when no committed row names it (pg-blob-queries.ts BLOB_REFERENCES) and its lease has
 * ended. The lease is what protects a blob put a moment ago whose row has not committed yet:
 * every put, and every `retain` before a commit that names an existing blob, extends it by the
 * grace period. Safe in every server process at once: each statement re-checks its conditions
 * on the rows it deletes.
 *
 * `asOf` replaces the database's clock for the lease comparison (tests).
 */
export async function collectBlobGarbage(db: BlobDb, opts: { asOf?: Date; batch?: number } = {}): Promise<BlobGcResult> {
  const abandonedUploads = await deleteAbandonedUploads(db, opts.asOf);
  const batch = opts.batch ?? SERVER_TUNING.blobStore.gcBatch;
  const deleted: BlobGcResult['deleted'] = [];
  for (;;) {
    const gone = await deleteUnreferencedBlobs(db, opts.asOf, batch);
    deleted.push(...gone);
    if (gone.length < batch) return { abandonedUploads, deleted };
  }
}
