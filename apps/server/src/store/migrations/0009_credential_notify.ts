import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * API-key changes that can end a key's validity (revocation, deletion, a new hash, role or
 * tenant) NOTIFY `svc_credentials` with the schema as payload, in the changing transaction,
 * so it is delivered at COMMIT. Every server process LISTENs and forgets its cached API-key
 * lookups (auth/api-key-cache.ts): a key revoked through one process, or by hand in SQL, is
 * refused by all of them at once.
 *
 * The column list keeps `last_used_at` bookkeeping (touchApiKey) from clearing caches.
 */
export const CREDENTIALS_CHANNEL = 'svc_credentials';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE FUNCTION api_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       PERFORM pg_notify('${CREDENTIALS_CHANNEL}', TG_TABLE_SCHEMA);
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER api_keys_notify_update AFTER UPDATE OF revoked_at, key_hash, role, tenant_id ON api_keys
       FOR EACH STATEMENT EXECUTE FUNCTION api_keys_notify()`,
    `CREATE TRIGGER api_keys_notify_delete AFTER DELETE OR TRUNCATE ON api_keys
       FOR EACH STATEMENT EXECUTE FUNCTION api_keys_notify()`,
  ]);
}
