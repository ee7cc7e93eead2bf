import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Blobs in the database (docs/server.md "Blob store"): when the server runs on PostgreSQL its
 * payloads (artifacts, release envelopes, attachments, submission PDFs, report twins) live
 * here, so server processes on hosts with no shared directory serve the same bytes.
 *
 * A blob is one `blobs` row and its `blob_chunks` (at most 1 MiB each, in order). Chunks are
 * keyed by the blob's row id, not its digest: the digest is known only after the last byte,
 * and an upload writes its chunks as they arrive, under a row in state `writing` that no
 * reader looks at. The row turns `stored` (digest set) in one statement once the bytes hashed
 * to it; a second upload of the same bytes then finds the digest taken and drops its own
 * chunks. `lease_until` keeps a row from garbage collection: an upload extends it while it
 * writes, and a stored blob keeps it for a grace period after each put so the row that will
 * name it can commit (blobs/pg-blob-gc.ts).
 *
 * The chunk bytes are stored EXTERNAL (out of line, uncompressed): payloads are mostly
 * compressed already, and an uncompressed TOAST value lets a range read fetch only its slice.
 * The indexes on the digest columns of the tables that name blobs serve the collector's
 * "still named?" checks.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE blobs (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      digest text UNIQUE CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
      state text NOT NULL CHECK (state IN ('writing', 'stored')),
      length bigint NOT NULL DEFAULT 0 CHECK (length >= 0),
      chunk_size integer NOT NULL CHECK (chunk_size > 0),
      created_at timestamptz NOT NULL DEFAULT now(),
      stored_at timestamptz,
      lease_until timestamptz NOT NULL,
      CHECK ((state = 'stored') = (digest IS NOT NULL AND stored_at IS NOT NULL))
    )`,
    `CREATE INDEX blobs_lease ON blobs (lease_until)`,
    `CREATE TABLE blob_chunks (
      blob_id bigint NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
      idx integer NOT NULL CHECK (idx >= 0),
      bytes bytea NOT NULL,
      PRIMARY KEY (blob_id, idx)
    )`,
    `ALTER TABLE blob_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL`,
    `CREATE INDEX artifacts_digest ON artifacts (digest)`,
    `CREATE INDEX tuf_target_files_sha256 ON tuf_target_files (sha256)`,
    `CREATE INDEX case_attachments_digest ON case_attachments (digest)`,
    `CREATE INDEX case_submissions_pdf_digest ON case_submissions (pdf_digest)`,
    `CREATE INDEX audit_events_report_twin ON audit_events ((detail->>'twin_sha256')) WHERE action = 'report.generate'`,
  ]);
}
