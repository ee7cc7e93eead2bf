import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.js';

/** Either the database or an open transaction: a query function runs in both. */
export type Db = Kysely<Database> | Transaction<Database>;

/** The transaction `inSnapshot()` runs its reads in. */
export type Snapshot = Transaction<Database>;

/**
 * Runs `fn` in a transaction, or inside the caller's when `db` already is one (kysely has no
 * nesting). The server's only transaction helper for changes: commands get theirs from the unit
 * of work (resources/unit-of-work.ts), which calls this. Reads use `inSnapshot()`.
 */
export function inTransaction<T>(db: Db, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db as Transaction<Database>);
  return db.transaction().execute(fn);
}

/**
 * Runs the reads of one answer in one snapshot: a list's page, its `total` and its `counts`
 * (spec §8) must describe the same data. Run as separate autocommit statements, a write
 * committing between them gives a page that disagrees with its total (an empty page with
 * `total: 1` right after a POST). On PostgreSQL this is a REPEATABLE READ, READ ONLY
 * transaction (every statement sees the snapshot of the first); on PGlite any transaction
 * holds the single session, so nothing commits until it ends. Inside a caller's transaction
 * the reads simply join it.
 */
export function inSnapshot<T>(db: Db, fn: (db: Snapshot) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db as Transaction<Database>);
  return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(fn);
}

/** PostgreSQL unique violation (both drivers surface `code`): the one check for it. */
export function isUniqueViolation(e: unknown): boolean {
  return (e as { code?: string } | null)?.code === '23505';
}
