import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * A planned rotation of a tenant's TUF online keys whose root is signed offline
 * (docs/signing-repository.md "Rotating the online keys"): the unsigned root N+1 the server
 * prepared, naming new online keys that are stored wrapped (`<tenant>/tuf-pending/<role>`) but
 * sign nothing until the signed root N+1 is accepted. At most one per tenant; `root_version`
 * is N+1, so a root committed meanwhile (another rotation, a recovery) makes it stale.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE tuf_pending_rotations (
      tenant_id uuid PRIMARY KEY REFERENCES tuf_repositories (tenant_id),
      root_version integer NOT NULL CHECK (root_version > 1),
      roles text[] NOT NULL CHECK (cardinality(roles) BETWEEN 1 AND 3),
      unsigned_root bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
  ]);
}
