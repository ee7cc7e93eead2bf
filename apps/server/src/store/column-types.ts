import type { ColumnType } from 'kysely';

/**
 * The column types the table interfaces share (src/store/database.ts composes the tables).
 * A column's interface type states what the drivers return for its PostgreSQL type and what
 * the code may write; test/store/table-types.test.ts checks every column against the
 * migrated database (docs/architecture.md, "The database schema").
 */

/** A timestamptz column: read as Date, written as Date or an SQL expression. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A timestamptz column with a database default. */
export type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** A jsonb column: read as parsed JSON, written as a JSON string. */
export type Json<T = unknown> = ColumnType<T, string, string>;
/** A jsonb column with a database default. */
export type GeneratedJson<T = unknown> = ColumnType<T, string | undefined, string>;
/** A bigint column: node-postgres reads it as text, PGlite as a number; written as a number. */
export type Int8 = ColumnType<string | number, number, number>;
/** A bigint identity column (`GENERATED ALWAYS`): read as text or a number, never written. */
export type Int8Identity = ColumnType<string | number, never, never>;
