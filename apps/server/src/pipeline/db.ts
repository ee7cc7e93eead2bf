import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../store/database.js';

/** Either the database or an open transaction: pipeline functions run in both. */
export type Db = Kysely<Database> | Transaction<Database>;

/** Runs `fn` in a transaction, or inside the caller's when already in one. */
export function inTransaction<T>(db: Db, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db as Transaction<Database>);
  return (db as Kysely<Database>).transaction().execute(fn);
}

/** PostgreSQL unique violation (both drivers surface `code`). */
export function isUniqueViolation(e: unknown): boolean {
  return (e as { code?: string } | null)?.code === '23505';
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path id that is not a UUID names nothing: answer 404 rather than a database cast error. */
export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID_RE.test(s);
}
