import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Bulk log requests (docs/inventory.md "Bulk actions"): `logs` joins the actions a bulk job
 * may run, so an operator can ask a filtered selection of devices for their log bundles in one
 * job. The action's CHECK constraint is replaced by one naming it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE device_bulk_jobs DROP CONSTRAINT device_bulk_jobs_action_check`,
    `ALTER TABLE device_bulk_jobs ADD CONSTRAINT device_bulk_jobs_action_check
       CHECK (action IN ('group.add', 'group.remove', 'tag', 'untag', 'decommission', 'logs'))`,
  ]);
}
