import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Deleting a device group (docs/publish-and-deploy.md "Groups"): a deleted group keeps its row, marked by
 * `deleted_at`, because the deployments that targeted it keep naming it (their `group_id` is a
 * foreign key and their history must stay readable); its members are removed. The name becomes
 * free again, so its uniqueness holds among live groups only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE device_groups ADD COLUMN deleted_at timestamptz`,
    `ALTER TABLE device_groups DROP CONSTRAINT device_groups_tenant_id_name_key`,
    `CREATE UNIQUE INDEX device_groups_live_name ON device_groups (tenant_id, name) WHERE deleted_at IS NULL`,
  ]);
}
