import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { startInterval, type Job } from './interval.js';

/**
 * Autovacuum for the embedded database. PGlite runs PostgreSQL in single-user mode, which
 * has no autovacuum launcher, so without this job nothing ever vacuums: dead row versions
 * pile up (every heartbeat leaves one) and the visibility map is never set, so index-only
 * scans visit the heap for every row. Measured on 100k devices after the offline detector
 * flipped the 66k online ones: `GET /devices?offset=50000` took 70 ms of database time with
 * 64,546 heap fetches, 5.7 ms after a VACUUM.
 *
 * The thresholds are PostgreSQL's autovacuum defaults (vacuum: 50 + 20 % of live rows dead,
 * or 1000 + 20 % inserted since the last vacuum; analyze: 50 + 10 % changed). PGlite does
 * not keep table statistics across restarts, so the server vacuums and analyzes every table
 * of its schema once before it listens. VACUUM holds the single embedded session while it runs
 * (about 0.3 s per 100k devices once the table is clean, 1 s when all are dirty).
 */
interface TableStats {
  relname: string;
  n_live_tup: string;
  n_dead_tup: string;
  n_mod_since_analyze: string;
  n_ins_since_vacuum: string;
}

export function vacuumDue(t: { live: number; dead: number; modifiedSinceAnalyze: number; insertedSinceVacuum: number }): boolean {
  return t.dead > 50 + 0.2 * t.live || t.insertedSinceVacuum > 1000 + 0.2 * t.live || t.modifiedSinceAnalyze > 50 + 0.1 * t.live;
}

/** VACUUM (ANALYZE) the schema's tables that are due (all of them with `all`); returns their names. */
export async function vacuumDueTables(db: Kysely<Database>, options: { all?: boolean } = {}): Promise<string[]> {
  const { rows } = await sql<TableStats>`
    SELECT relname, n_live_tup::text, n_dead_tup::text, n_mod_since_analyze::text, n_ins_since_vacuum::text
    FROM pg_stat_user_tables WHERE schemaname = current_schema() ORDER BY relname`.execute(db);
  const due = rows.filter(
    (r) =>
      options.all === true ||
      vacuumDue({
        live: Number(r.n_live_tup),
        dead: Number(r.n_dead_tup),
        modifiedSinceAnalyze: Number(r.n_mod_since_analyze),
        insertedSinceVacuum: Number(r.n_ins_since_vacuum),
      }),
  );
  for (const r of due) await sql.raw(`VACUUM (ANALYZE) "${r.relname.replaceAll('"', '""')}"`).execute(db);
  return due.map((r) => r.relname);
}

/**
 * The periodic pass (every minute): only what is due. The server runs one `all` pass before
 * it listens (main.ts), because PGlite starts with empty statistics.
 */
export function startEmbeddedVacuum(
  db: Kysely<Database>,
  opts: { intervalMs?: number; onError?: (e: unknown) => void; onVacuumed?: (tables: string[], ms: number) => void } = {},
): Job {
  return startInterval(
    async () => {
      const t0 = performance.now();
      const tables = await vacuumDueTables(db);
      if (tables.length > 0) opts.onVacuumed?.(tables, performance.now() - t0);
    },
    opts.intervalMs ?? 60_000,
    opts.onError ?? (() => {}),
  );
}

/**
 * Whether PostgreSQL's autovacuum is off (`SHOW autovacuum`). The server then warns at start:
 * nothing refreshes the planner's statistics or the visibility map as the fleet's tables grow,
 * and statements that find one device's row by key start reading whole deployments or fleets.
 * PGlite has no autovacuum to turn on: its tables are the job's above.
 */
export async function autovacuumOff(db: Kysely<Database>): Promise<boolean> {
  const { rows } = await sql<{ autovacuum: string }>`SHOW autovacuum`.execute(db);
  return rows[0]?.autovacuum === 'off';
}
