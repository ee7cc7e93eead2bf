import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.js';

/** Either the database or an open transaction: a query function runs in both. */
export type Db = Kysely<Database> | Transaction<Database>;

/**
 * Runs `fn` in a transaction, or inside the caller's when `db` already is one (kysely has no
 * nesting). The server's only transaction helper: commands get theirs from the unit of work
 * (resources/unit-of-work.ts), which calls this.
 */
export function inTransaction<T>(db: Db, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db as Transaction<Database>);
  return db.transaction().execute(fn);
}

/** PostgreSQL unique violation (both drivers surface `code`): the one check for it. */
export function isUniqueViolation(e: unknown): boolean {
  return (e as { code?: string } | null)?.code === '23505';
}
