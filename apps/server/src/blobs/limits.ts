/**
 * Bounds of the PostgreSQL blob store (docs/server.md "Blob store"), in one place.
 */
export const BLOB_STORE_LIMITS = Object.freeze({
  /**
   * Bytes per `blob_chunks` row. 1 MiB keeps one row's value far below PostgreSQL's 1 GB field
   * limit and a read's memory at a few chunks, while one statement per MiB keeps the per-row
   * overhead small next to the bytes moved.
   */
  chunkBytes: 1024 * 1024,
  /**
   * Whole chunks one get reads per statement (one COPY on PostgreSQL), as for writes. A chunk a
   * range covers only in part is read alone, sliced by the database.
   */
  chunksPerRead: 2,
  /**
   * Read statements one get keeps under way on pooled connections: the database reads the
   * next chunks while this process sends the current ones. Memory per download is at most
   * about readsInFlight x chunksPerRead chunks, plus the one being sent.
   */
  readsInFlight: 2,
  /**
   * Chunks one put sends per statement (one COPY on PostgreSQL): a statement and its commit
   * cost about as much as a few hundred KiB of bytes, so several chunks share one.
   */
  chunksPerWrite: 4,
  /**
   * Write statements one put keeps under way on pooled connections while it reads and hashes
   * the next chunks. Memory per upload is at most (writesInFlight + 1) x chunksPerWrite chunks.
   */
  writesInFlight: 2,
  /**
   * How long a stored blob outlives its last put (or `retain`) before the collector may take
   * it, when no committed row names it: the time a caller has to commit the row that will.
   */
  graceMs: 60 * 60_000,
  /** An upload's lease on its `writing` row, renewed as it writes; a writer gone that long is collected. */
  uploadLeaseMs: 15 * 60_000,
  /** Blobs one collector statement deletes at most. */
  gcBatch: 100,
  /** How often each server process runs the collector. */
  gcIntervalMs: 60 * 60_000,
});
