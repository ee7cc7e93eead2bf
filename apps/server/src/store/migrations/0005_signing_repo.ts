import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Signing repository: the per-tenant TUF metadata lives in the database so
 * that every server process on one PostgreSQL serves the same repository. Payload
 * bytes never do: they are in the blob store, named here only by their sha256.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    // One row per tenant repository; publish and refresh lock it (SELECT ... FOR UPDATE).
    `CREATE TABLE tuf_repositories (
      tenant_id uuid PRIMARY KEY REFERENCES tenants(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    // Append-only: every signed version of every role, the exact bytes devices get.
    `CREATE TABLE tuf_metadata (
      tenant_id uuid NOT NULL REFERENCES tuf_repositories(tenant_id),
      role text NOT NULL CHECK (role IN ('root', 'targets', 'snapshot', 'timestamp')),
      version integer NOT NULL CHECK (version >= 1),
      bytes bytea NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, role, version)
    )`,
    // Every (path, hash) ever published, so a device holding an older consistent
    // snapshot can still fetch its targets, and only published blobs are served.
    `CREATE TABLE tuf_target_files (
      tenant_id uuid NOT NULL REFERENCES tuf_repositories(tenant_id),
      path text NOT NULL,
      sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
      length bigint NOT NULL CHECK (length >= 0),
      targets_version integer NOT NULL,
      -- custom.media_type of the target when it is a plain media type: the Content-Type served.
      media_type text,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, path, sha256)
    )`,
  ]);
}
