/**
 * Every cap on an imported feed, in one place (docs/vulnerabilities.md "Limits"). Archive
 * caps are checked before anything is written (a 400); a record over its cap is skipped
 * and counted.
 */
export const FEED_LIMITS = {
  /** bytes of one uploaded OSV archive (zip, tar or tar.gz) */
  maxArchiveBytes: 1024 * 1024 * 1024,
  /** entries of one archive */
  maxEntries: 1_000_000,
  /** uncompressed bytes of all record entries together */
  maxExpandedBytes: 8 * 1024 * 1024 * 1024,
  /** uncompressed / compressed size of one zip entry, and of a whole tar.gz (zip bombs) */
  maxCompressionRatio: 200,
  /** uncompressed bytes of one OSV record (larger: skipped, counted) */
  maxRecordBytes: 8 * 1024 * 1024,
  /** `affected[]` entries of one record, and `versions[]` of one entry (larger: skipped) */
  maxAffected: 10_000,
  maxVersions: 100_000,
  /** bytes of a CISA KEV catalog (the real one is about 1.5 MB) */
  maxKevBytes: 64 * 1024 * 1024,
  /** records written per transaction (one audit row each) */
  batchRecords: 1000,
  /** skipped records whose reason the import keeps (all are counted) */
  keptSkipReasons: 100,
} as const;
