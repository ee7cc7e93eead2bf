import { sql } from 'kysely';
import { Migrator, type MigrationResultSet } from 'kysely/migration';
import { migrations } from './migrations/index.js';
import { ignoreDuplicate, type Store } from './open.js';
import type { Kysely } from 'kysely';
import type { Database } from './database.js';

/**
 * Session advisory lock held around migrations on PostgreSQL, and by anything that drops a
 * schema (test teardown). Kysely's migrator introspects the tables of EVERY schema; a schema
 * dropped by another connection in the middle of that scan fails it with "schema ... does
 * not exist". Holding one lock for both makes the scan and the drop take turns.
 */
export const SCHEMA_LOCK_KEY = 7_201_958_331;

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/**
 * Brings the schema to the latest migration, forward only. Kysely takes an advisory lock,
 * so two processes starting together migrate once. Re-running is a no-op.
 */
export async function migrateToLatest(store: Store): Promise<string[]> {
  if (store.driver !== 'postgres') return migrateOn(store.db, store.schema);
  return store.db.connection().execute(async (conn) => {
    await sql`SELECT pg_advisory_lock(${SCHEMA_LOCK_KEY})`.execute(conn);
    try {
      return await migrateOn(conn, store.schema);
    } finally {
      await sql`SELECT pg_advisory_unlock(${SCHEMA_LOCK_KEY})`.execute(conn);
    }
  });
}

async function migrateOn(db: Kysely<Database>, schema: string): Promise<string[]> {
  // Extensions are database-wide and not transactional with the migrator's lock: create
  // them first, in public, tolerating a concurrent creator.
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public`.execute(db).catch(ignoreDuplicate);
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error !== undefined) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new MigrationError(`migration ${failed} failed: ${String((result.error as Error).message ?? result.error)}`, {
      cause: result.error,
    });
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
