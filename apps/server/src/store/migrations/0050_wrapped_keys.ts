import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Every private key the service holds, wrapped by the key-encryption key (docs/server.md "Key
 * encryption"): the TUF online (and, until exported, root) keys, the device CA keys, the
 * evidence keys and the server CA of the device channel. Several processes on hosts without a
 * shared directory read their keys from here. `key_id` is `<tenant>/<name>` (`server/<name>`
 * for the server's own keys) and is the additional authenticated data of the wrap, so a
 * wrapped key copied to another row does not open. `kek_id` names the KEK that wrapped it and
 * `wrap_alg` how; `public_key_id` (sha256 of the SPKI) lets a check compare without unwrapping.
 * A CA's certificate is kept beside its key when no other table holds it (the server CA).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE wrapped_keys (
      key_id text PRIMARY KEY,
      tenant_id uuid REFERENCES tenants (id),
      name text NOT NULL,
      public_key_id text NOT NULL,
      certificate bytea,
      wrap_alg text NOT NULL,
      kek_id text NOT NULL,
      wrapped bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      wrapped_at timestamptz NOT NULL DEFAULT now(),
      CHECK (key_id = coalesce(tenant_id::text, 'server') || '/' || name)
    )`,
    `CREATE INDEX wrapped_keys_kek ON wrapped_keys (kek_id)`,
  ]);
}
