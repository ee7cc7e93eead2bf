import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * The evidence keys of case exports (docs/article-14.md "The evidence key"): every key a tenant
 * has signed exports with, its public key and its validity period. At most one key per tenant
 * is current (`valid_until` NULL); a rotation ends it and starts the next in one unit of work.
 * The private key stays a file under the data directory; the record is what the service
 * compares that file with before signing, so a lost file is refused instead of replaced.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE evidence_keys (
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      seq integer NOT NULL CHECK (seq > 0),
      keyid text NOT NULL,
      algorithm text NOT NULL DEFAULT 'ed25519',
      public_key_pem text NOT NULL,
      valid_from timestamptz NOT NULL,
      valid_until timestamptz,
      created_by text NOT NULL,
      retired_by text,
      PRIMARY KEY (tenant_id, seq),
      UNIQUE (tenant_id, keyid),
      CHECK (valid_until IS NULL OR valid_until >= valid_from),
      CHECK ((valid_until IS NULL) = (retired_by IS NULL))
    )`,
    `CREATE UNIQUE INDEX evidence_keys_current ON evidence_keys (tenant_id) WHERE valid_until IS NULL`,
  ]);
}
