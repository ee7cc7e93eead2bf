import { collectBlobGarbage, type BlobGcResult } from '../blobs/pg-blob-gc.js';
import type { BlobDb } from '../blobs/pg-blob-queries.js';
import { startInterval, type Job } from './interval.js';
import { SERVER_TUNING } from '../limits.js';

/**
 * Collects the database blob store's garbage (blobs/pg-blob-gc.ts) periodically. Every server
 * process runs it; the statements are safe to run concurrently, so no lease is needed.
 */
export function startBlobGc(db: BlobDb, opts: { intervalMs?: number; onError?: (e: unknown) => void; onCollected?: (r: BlobGcResult) => void } = {}): Job {
  const onError = opts.onError ?? (() => {});
  return startInterval(
    async () => {
      const r = await collectBlobGarbage(db);
      if (r.abandonedUploads > 0 || r.deleted.length > 0) opts.onCollected?.(r);
    },
    opts.intervalMs ?? SERVER_TUNING.blobStore.gcIntervalMs,
    onError,
  );
}
