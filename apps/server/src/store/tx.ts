import type { Kysely } from 'kysely';
import type { Database } from './database.js';

/** Runs `fn` in a transaction, or directly when `db` already is one (kysely has no nesting). */
export function inTransaction<T>(db: Kysely<Database>, fn: (tx: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}
