import { sql } from 'kysely';
import { Migrator, type MigrationResultSet } from 'kysely/migration';
import { migrations } from './migrations/index.js';
import { ignoreDuplicate, type Store } from './open.js';

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/**
 * Brings the schema to the latest migration, forward only. Kysely takes an advisory lock,
 * so two processes starting together migrate once. Re-running is a no-op.
 */
export async function migrateToLatest(store: Store): Promise<string[]> {
  // Extensions are database-wide and not transactional with the migrator's lock: create
  // them first, in public, tolerating a concurrent creator.
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public`.execute(store.db).catch(ignoreDuplicate);
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: store.schema,
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
