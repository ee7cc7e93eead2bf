import type { ColumnType, Generated } from 'kysely';

/**
 * Tables of the signing repository (migration 0002_signing_repo). Composed into
 * the server's `Database` interface by src/store/database.ts.
 */
export interface TufRepositoriesTable {
  tenant_id: string;
  /** The row publish locks (`SELECT ... FOR UPDATE`) so repository changes of a tenant serialize across processes. */
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface TufMetadataTable {
  tenant_id: string;
  role: 'root' | 'targets' | 'snapshot' | 'timestamp';
  version: number;
  /** The exact signed JSON bytes served to devices. */
  bytes: Uint8Array;
  expires_at: ColumnType<Date, Date | string, never>;
  created_at: Generated<Date>;
}

/** Every (path, hash) ever published, so older consistent-snapshot targets stay downloadable. */
export interface TufTargetFilesTable {
  tenant_id: string;
  path: string;
  sha256: string;
  /** bigint: the pg driver returns a string, PGlite a number. */
  length: ColumnType<string | number, number, never>;
  targets_version: number;
  media_type: string | null;
  created_at: Generated<Date>;
}

/** A prepared online key rotation waiting for its root to be signed offline (migration 0054). */
export interface TufPendingRotationsTable {
  tenant_id: string;
  /** N+1: the version of the prepared root. */
  root_version: number;
  roles: ('targets' | 'snapshot' | 'timestamp')[];
  /** The prepared root metadata document (no signatures), exactly as exported for signing. */
  unsigned_root: Uint8Array;
  created_at: ColumnType<Date, never, never>;
}

export interface SigningRepoTables {
  tuf_repositories: TufRepositoriesTable;
  tuf_metadata: TufMetadataTable;
  tuf_target_files: TufTargetFilesTable;
  tuf_pending_rotations: TufPendingRotationsTable;
}
