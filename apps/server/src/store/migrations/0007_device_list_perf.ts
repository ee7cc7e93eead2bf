import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Device counts on UPDATE, per statement instead of per row (spec §8: `counts` kept
 * incrementally).
 *
 * Why: 0002's row trigger upserted the tenant's counts row once per changed device. When
 * one statement flips many devices (the offline detector after an outage: 66k devices in
 * one UPDATE), every upsert adds a version of the SAME counts row inside one transaction,
 * and each next upsert walks that growing chain: quadratic. Measured on PostgreSQL 15:
 * 2k devices 0.4 s, 4k 1.1 s, 8k 4.0 s, 66k about 5 minutes, holding the counts row lock
 * (blocking every enrollment and decommission of the tenant) and leaving thousands of dead
 * versions that every list request then reads through.
 *
 * Now: one statement-level trigger with transition tables (like insert and delete in
 * 0002) nets the changes per (tenant, status) and applies one upsert per group. Groups
 * whose net change is 0 (heartbeats: status unchanged) write nothing. Upserts run in
 * (tenant_id, status) order so two concurrent flips (online->offline and offline->online)
 * lock the counts rows in the same order and cannot deadlock.
 * PostgreSQL refuses transition tables on a trigger with a column list, so the trigger
 * fires on every UPDATE of devices; the netting query is what keeps heartbeats cheap.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `DROP TRIGGER devices_counts_update ON devices`,
    `DROP FUNCTION device_counts_update()`,
    `CREATE FUNCTION device_counts_update_statement() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO device_counts (tenant_id, status, n)
         SELECT tenant_id, status, sum(k) FROM (
           SELECT tenant_id, status, -1 AS k FROM old_rows
           UNION ALL
           SELECT tenant_id, status, 1 AS k FROM new_rows
         ) AS changes
         GROUP BY tenant_id, status
         HAVING sum(k) <> 0
         ORDER BY tenant_id, status
         ON CONFLICT (tenant_id, status) DO UPDATE SET n = device_counts.n + EXCLUDED.n;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER devices_counts_update AFTER UPDATE ON devices
       REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION device_counts_update_statement()`,
  ]);
}
