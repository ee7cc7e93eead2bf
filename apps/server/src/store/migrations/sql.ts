import { sql, type Kysely } from 'kysely';

/**
 * Runs DDL statements one at a time: PGlite's extended protocol refuses several
 * statements in one query, and one-per-call keeps error messages pointing at the culprit.
 */
export async function runStatements(db: Kysely<unknown>, statements: readonly string[]): Promise<void> {
  for (const statement of statements) {
    await sql.raw(statement).execute(db);
  }
}
